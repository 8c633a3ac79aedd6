"""The table of syncs: a version of an agent's or workflow's configuration pushed to a runtime
integration (models.syncs)."""
from __future__ import annotations

from peewee import CharField, DateTimeField, FloatField, IntegerField, SmallIntegerField, TextField

from models.kernel.db import new_id, utcnow
from models.kernel.scoping import WorkspaceScoped


class ConfigSync(WorkspaceScoped):
    """One push of a version's configuration: queued (waiting for its first attempt or a retry),
    running (leased to a worker), then succeeded or failed. The entity, its version and the
    integration are plain ids, not foreign keys: a sync outlives what it names, so that the sync of
    an agent deleted meanwhile ends failed with its reason instead of vanishing with the agent."""
    id = CharField(primary_key=True, default=new_id)
    entity_type = CharField(max_length=16)  # agent or workflow
    entity_id = CharField()
    version_id = CharField()
    version_number = IntegerField()
    integration_id = CharField()
    status = CharField(max_length=16)  # queued | running | succeeded | failed
    attempts = IntegerField(default=0)  # the claim's token: each claim adds one
    # When it is due: at once when queued, after the backoff of a failed attempt, when its lease
    # ends while running (a worker that died); NULL once finished, so the claim never reads it.
    next_attempt_at = DateTimeField(null=True)
    lease_until = DateTimeField(null=True)
    # The runtime's answer to the last attempt: its status, the first KB of its body, the time taken.
    response_status = SmallIntegerField(null=True)
    response_body = TextField(null=True)
    response_latency_ms = FloatField(null=True)
    error = TextField(null=True)  # why the last attempt failed (a retry may follow), or why it failed
    requested_by = CharField()
    created_at = DateTimeField(default=utcnow)
    finished_at = DateTimeField(null=True)
    updated_at = DateTimeField(default=utcnow)

    class Meta:
        table_name = "config_sync"
        indexes = (
            # The list of an agent's or workflow's syncs, newest first.
            (("workspace", "entity_type", "entity_id", "created_at", "id"), False),
            # The claim: the most overdue unfinished sync.
            (("next_attempt_at",), False),
        )
