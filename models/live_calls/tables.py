"""The tables of live calls: the call as its runtime registered it, each status move it made, and
the control requests sent to it while it runs (models.live_calls)."""
from __future__ import annotations

from peewee import CharField, DateTimeField, ForeignKeyField, TextField

from models.kernel.db import JSONField, new_id, utcnow
from models.kernel.scoping import WorkspaceScoped


class LiveCall(WorkspaceScoped):
    id = CharField(primary_key=True, default=new_id)
    call_id = CharField(max_length=128)  # the runtime's id, the one its end-of-call-report carries
    direction = CharField(max_length=16)  # inbound or outbound
    entity_type = CharField(max_length=16)  # agent or workflow
    entity_id = CharField()
    version_id = CharField()
    from_number = CharField(max_length=32)  # E.164
    to_number = CharField(max_length=32)
    campaign_id = CharField(null=True)
    contact_id = CharField(null=True)
    # queued, ringing, in-progress, forwarding, ended (models.live_calls.lifecycle)
    status = CharField(max_length=16)
    status_reason = TextField(null=True)
    # When the current status began, as its move said; None while queued (nothing to follow yet).
    status_at = DateTimeField(null=True)
    registered_at = DateTimeField(default=utcnow)
    ringing_at = DateTimeField(null=True)
    answered_at = DateTimeField(null=True)  # its first move into in-progress
    ended_at = DateTimeField(null=True)
    updated_at = DateTimeField(default=utcnow)
    # The recorded call its end-of-call-report made (its id, perhaps not call_id: models.calls.calls).
    recorded_call_id = CharField(null=True)

    class Meta:
        indexes = (
            (("workspace", "call_id"), True),
            # The list of calls not ended, newest first.
            (("workspace", "registered_at", "id"), False),
        )


class LiveCallMove(WorkspaceScoped):
    """One status move of a live call, in the order they were made."""
    id = CharField(primary_key=True, default=new_id)
    live_call = ForeignKeyField(LiveCall, on_delete="CASCADE", backref="+", index=False)
    from_status = CharField(max_length=16)
    to_status = CharField(max_length=16)
    at = DateTimeField()  # when it happened, as the runtime says
    reason = TextField(null=True)
    recorded_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = ((("live_call", "recorded_at", "id"), False),)


class LiveCallControl(WorkspaceScoped):
    """A request to a running call (a transfer, a resume, a message), delivered to its runtime by
    webhook or by claim, and acknowledged by it (models.live_calls.controls)."""
    id = CharField(primary_key=True, default=new_id)
    live_call = ForeignKeyField(LiveCall, on_delete="CASCADE", backref="+", index=False)
    call_id = CharField(max_length=128)  # the live call's, so that a claim answers without a join
    kind = CharField(max_length=16)  # transfer, resume, message
    request = JSONField()
    # pending, delivered, done, failed
    state = CharField(max_length=16)
    error = TextField(null=True)
    created_by = CharField()
    created_at = DateTimeField(default=utcnow)
    delivered_at = DateTimeField(null=True)
    completed_at = DateTimeField(null=True)
    updated_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = (
            (("live_call", "created_at", "id"), False),
            # The claim: a workspace's pending requests, oldest first.
            (("workspace", "state", "created_at", "id"), False),
        )
