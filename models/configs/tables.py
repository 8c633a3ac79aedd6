"""The tables of versioned configurations: agents and workflows, their versions and branches,
and the agents each workflow version names (models.configs)."""
from __future__ import annotations

from typing import ClassVar

from peewee import BooleanField, CharField, DateTimeField, ForeignKeyField, IntegerField, TextField

from models.kernel.db import BaseModel, JSONField, new_id, utcnow
from models.kernel.scoping import WorkspaceScoped

# A branch's statuses.
OPEN, MERGED, CLOSED = "open", "merged", "closed"
STATUSES = (OPEN, MERGED, CLOSED)


class VersionedEntity(WorkspaceScoped):
    """What agents and workflows share; each subclass names its ``KIND``. The rules between the
    kinds (what a configuration may name, what may not be deleted) are models.configs.references."""

    KIND: ClassVar[str]

    id = CharField(primary_key=True, default=new_id)
    name = TextField()
    created_by = CharField()
    created_at = DateTimeField(default=utcnow)
    updated_at = DateTimeField(default=utcnow)
    # The last version number given out (see the module's docstring).
    version_count = IntegerField(default=0)
    head_version_id = CharField(null=True)
    published_version_id = CharField(null=True)

    @classmethod
    def label(cls) -> str:
        return cls.KIND


class Version(WorkspaceScoped):
    id = CharField(primary_key=True, default=new_id)
    entity_type = CharField()
    entity_id = CharField()
    version_number = IntegerField()
    parent_version_id = CharField(null=True)
    branch_id = CharField(null=True)
    name = TextField()
    config = JSONField()
    config_diff_summary = JSONField()
    created_by = CharField()
    created_at = DateTimeField(default=utcnow)
    is_published = BooleanField(default=False)
    published_at = DateTimeField(null=True)
    published_by = CharField(null=True)
    # The feedback this version closed, [{id, number, title}], as the solution accepted into it
    # recorded it (models.optimization); None for a version that closed none.
    closed_feedbacks = JSONField(null=True)

    class Meta:
        table_name = "entity_version"
        # Numbers are unique per entity, and the list reads a page straight off this index.
        indexes = ((("workspace", "entity_type", "entity_id", "version_number"), True),)


class Branch(WorkspaceScoped):
    id = CharField(primary_key=True, default=new_id)
    entity_type = CharField()
    entity_id = CharField()
    name = TextField()
    status = CharField(default=OPEN)
    base_version_id = CharField()
    head_version_id = CharField()
    commit_count = IntegerField(default=0)
    merged_version_id = CharField(null=True)
    created_by = CharField()
    created_at = DateTimeField(default=utcnow)
    updated_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = ((("workspace", "entity_type", "entity_id", "created_at", "id"), False),)


class Agent(VersionedEntity):
    KIND = "agent"

    class Meta:
        indexes = ((("workspace", "created_at", "id"), False),)


class Workflow(VersionedEntity):
    KIND = "workflow"

    class Meta:
        indexes = ((("workspace", "created_at", "id"), False),)


class WorkflowAgent(BaseModel):
    """An agent that a version of a workflow names."""
    version = ForeignKeyField(Version, on_delete="CASCADE", backref="+")
    workflow_id = CharField()
    agent_id = CharField(index=True)
