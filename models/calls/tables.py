"""The tables of calls: the call as its report recorded it, its tags, its count, its recording's
transcription job, and the structured data its agent extracts (models.calls)."""
from __future__ import annotations

from peewee import (
    BigIntegerField,
    BooleanField,
    CharField,
    CompositeKey,
    DateTimeField,
    DoubleField,
    ForeignKeyField,
    IntegerField,
    TextField,
)

from models.configs.tables import Agent
from models.kernel.db import JSONField, utcnow
from models.kernel.scoping import WorkspaceScoped


class Call(WorkspaceScoped):
    id = CharField(primary_key=True)  # the call runtime's callId
    agent_id = CharField(null=True)
    call_type = CharField(max_length=32, null=True)
    status = TextField(null=True)
    call_end_reason_category = TextField(null=True)
    ended_reason = TextField(null=True)
    customer = TextField(null=True)
    started_at = DateTimeField()
    ended_at = DateTimeField()
    duration_ms = DoubleField()
    recording_url = TextField(null=True)
    summary = TextField(null=True)
    transcript = TextField(null=True)
    sent_at = DateTimeField(null=True)
    payload = JSONField()  # the report as received, unknown fields included
    ingest_warnings = JSONField()
    received_at = DateTimeField(default=utcnow)
    recording_path = TextField(null=True)
    recording_content_type = CharField(null=True)
    recording_bytes = BigIntegerField(null=True)
    recording_uploaded_at = DateTimeField(null=True)
    transcription_status = CharField(max_length=32, null=True)
    transcription_error = TextField(null=True)
    transcription_text = TextField(null=True)
    transcription_words = JSONField(null=True)
    transcription_language = CharField(max_length=64, null=True)
    transcribed_at = DateTimeField(null=True)

    class Meta:
        indexes = (
            (("workspace", "started_at", "id"), False),
            (("workspace", "agent_id", "started_at"), False),
            (("workspace", "duration_ms", "id"), False),
            (("workspace", "customer"), False),
        )


class CallTag(WorkspaceScoped):
    call = ForeignKeyField(Call, on_delete="CASCADE", backref="+", index=False)
    name = TextField()
    name_key = TextField()  # the name folded to lower case: a call's tags are unique without case
    created_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = (
            (("call", "name_key"), True),
            (("workspace", "name_key"), False),
        )


class CallCount(WorkspaceScoped):
    """A workspace's number of calls, in shards: the unfiltered list's total is a sum of a few
    rows, not a count of every call (15 ms at 100,000 calls on PostgreSQL, more than the page).
    Each call counts in the shard its id hashes to, so concurrent ingests rarely wait on one row.
    Whatever deletes calls must take them off here, in the same transaction."""
    shard = IntegerField()
    calls = BigIntegerField()

    class Meta:
        primary_key = CompositeKey("workspace", "shard")


class TranscriptionJob(WorkspaceScoped):
    call = ForeignKeyField(Call, primary_key=True, on_delete="CASCADE", backref="+")
    status = CharField(max_length=32)
    attempts = IntegerField(default=0)
    # A running job whose lease ran out (its process died) is taken again by another.
    lease_until = DateTimeField(null=True)
    error = TextField(null=True)
    created_at = DateTimeField(default=utcnow)
    updated_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = ((("status", "lease_until"), False),)


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
