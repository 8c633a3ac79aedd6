"""Structured-data fields (the insights group): their definitions per workspace, which agents'
calls carry them, and the values calls hold."""
from __future__ import annotations

from peewee import BooleanField, CharField, DateTimeField, DoubleField, ForeignKeyField, TextField

from .agents import Agent
from .calls import Call
from .db import JSONField, utcnow
from .scoping import WorkspaceScoped

FIELD_TYPES = ("string", "number", "boolean", "enum")


class StructuredField(WorkspaceScoped):
    name = TextField()
    name_key = TextField()  # the name folded to lower case: unique per workspace without case
    type = CharField(max_length=32)
    enum_values = JSONField(null=True)
    description = TextField(null=True)
    created_at = DateTimeField(default=utcnow)
    updated_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = ((("workspace", "name_key"), True),)


class AgentInsight(WorkspaceScoped):
    agent = ForeignKeyField(Agent, on_delete="CASCADE", backref="+", index=False)
    field = ForeignKeyField(StructuredField, on_delete="CASCADE", backref="+", index=True)
    created_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = ((("agent", "field"), True),)


class CallValue(WorkspaceScoped):
    """One field's value in one call; the call's start, agent and type are copied here so that
    analytics reads this table alone, along (workspace, field, started_at)."""
    call = ForeignKeyField(Call, on_delete="CASCADE", backref="+", index=False)
    field = ForeignKeyField(StructuredField, on_delete="CASCADE", backref="+", index=False)
    started_at = DateTimeField()
    agent_id = CharField(null=True)
    call_type = CharField(max_length=32, null=True)
    number_value = DoubleField(null=True)
    boolean_value = BooleanField(null=True)
    text_value = TextField(null=True)

    class Meta:
        indexes = (
            (("call", "field"), True),
            (("workspace", "field", "started_at"), False),
        )


def values_by_call(*, workspace_id, call_ids):  # TEMP-STUB
    return {}


def store_report_values(*, workspace_id, call_id, started_at, agent_id, call_type, structured_data):  # TEMP-STUB
    return [f"structuredData.{k} names no field" for k in structured_data]
