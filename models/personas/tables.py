"""The table of personas (models.personas)."""
from __future__ import annotations

from peewee import CharField, DateTimeField, TextField

from models.kernel.db import JSONField, new_id, utcnow
from models.kernel.scoping import WorkspaceScoped


class Persona(WorkspaceScoped):
    """A simulated caller: named once per workspace without regard to case."""
    id = CharField(primary_key=True, default=new_id)
    name = TextField()
    name_key = TextField()  # the name folded to lower case: unique per workspace, and the list's order
    goal = TextField()
    traits = JSONField()  # [str]
    language = CharField(max_length=35)  # a BCP 47 tag
    opening_line = TextField(null=True)
    facts = JSONField()  # {name: value}
    constraints = JSONField()  # [str]
    end_condition = TextField(null=True)
    metadata = JSONField()  # a client's own, free-form
    created_by = CharField()
    created_at = DateTimeField(default=utcnow)
    updated_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = (
            (("workspace", "name_key"), True),
        )
