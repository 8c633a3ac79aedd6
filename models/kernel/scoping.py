"""Workspace scoping: the one way to query the rows of a workspace.

Every resource that belongs to a workspace (API keys now; agents, calls, campaigns... as they
come) derives from ``WorkspaceScoped`` and is read through ``in_workspace``, never through a bare
``select()``: a query that forgot its workspace would show one customer's data to another.
tests/models/test_scoping.py fails on a bare ``select()`` of a scoped model in models/.

A join follows a stored reference, and a reference may name an id another workspace made up (an
end-of-call-report may name any agentId): every join onto a scoped row says ``same_workspace``, so
that a foreign id joins nothing, as an unknown one would. tests/models/test_scoping.py fails on a
join of a scoped model that does not.
"""
from __future__ import annotations

from peewee import BigIntegerField, CharField, DateTimeField, ForeignKeyField, IntegerField, TextField

from models.kernel.db import BaseModel, JSONField, new_id, utcnow


class Workspace(BaseModel):
    id = CharField(primary_key=True, default=new_id)
    name = TextField()
    created_at = DateTimeField(default=utcnow)
    # Time zone, default language, webhook and speech defaults (models.identity.workspaces).
    settings = JSONField(default=dict)
    # Calls older than this many days are purged (models.calls.retention); None keeps them.
    data_retention_days = IntegerField(null=True)
    # The running sum of the workspace's credits ledger (models.billing.credits).
    credit_balance = BigIntegerField(default=0)
    updated_at = DateTimeField(null=True)


class WorkspaceScoped(BaseModel):
    # No index of its own: each scoped model declares a composite index that starts with workspace
    # and goes on with its list order, which serves both the scoping and the page.
    workspace = ForeignKeyField(Workspace, on_delete="CASCADE", backref="+", index=False)

    @classmethod
    def in_workspace(cls, workspace_id: str, *columns):
        """``SELECT columns FROM <this model> WHERE workspace_id = workspace_id``, to refine further."""
        return cls.select(*columns).where(cls.workspace == workspace_id)


def same_workspace(condition, joined, row):
    """The join ``condition`` of the scoped ``joined`` (a model or an alias of one) onto ``row``'s
    scoped model, held to the rows of one workspace."""
    return condition & (joined.workspace == row.workspace)
