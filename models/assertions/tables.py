"""The tables of unit tests: a suite, its assertions and its assignments to agents and workflows
(models.assertions)."""
from __future__ import annotations

from peewee import CharField, DateTimeField, ForeignKeyField, TextField

from models.kernel.db import JSONField, new_id, utcnow
from models.kernel.scoping import WorkspaceScoped


class AssertionSuite(WorkspaceScoped):
    id = CharField(primary_key=True, default=new_id)
    name = TextField()
    name_key = TextField()  # the name folded to lower case: unique per workspace without case
    description = TextField(null=True)
    created_by = CharField()
    created_at = DateTimeField(default=utcnow)
    updated_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = (
            (("workspace", "name_key"), True),
        )


class Assertion(WorkspaceScoped):
    id = CharField(primary_key=True, default=new_id)
    suite = ForeignKeyField(AssertionSuite, on_delete="CASCADE", backref="+", index=False)
    name = TextField()
    kind = CharField(max_length=16)  # models.assertions.assertions.KINDS
    params = JSONField()  # the kind's parameters as the API names them, defaults filled in
    created_by = CharField()
    created_at = DateTimeField(default=utcnow)
    updated_at = DateTimeField(default=utcnow)

    class Meta:
        table_name = "assertion"
        indexes = (
            (("suite", "created_at", "id"), False),
        )


class SuiteAssignment(WorkspaceScoped):
    """A suite put on an agent or a workflow: the suites a simulation of it evaluates."""
    id = CharField(primary_key=True, default=new_id)
    suite = ForeignKeyField(AssertionSuite, on_delete="CASCADE", backref="+", index=False)
    entity_type = CharField(max_length=16)  # agent or workflow
    entity_id = CharField()
    assigned_by = CharField()
    assigned_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = (
            (("suite", "entity_type", "entity_id"), True),
            (("workspace", "entity_type", "entity_id"), False),
        )
