"""The table of whole-workspace exports (models.exports)."""
from __future__ import annotations

from peewee import BigIntegerField, BooleanField, CharField, DateTimeField, IntegerField, SmallIntegerField, TextField

from models.kernel.db import new_id, utcnow
from models.kernel.scoping import WorkspaceScoped


class WorkspaceExport(WorkspaceScoped):
    """One export of a workspace: queued, running (leased to a worker), then succeeded or failed;
    expired once its file is deleted past expires_at."""
    id = CharField(primary_key=True, default=new_id)
    status = CharField(max_length=16)  # queued | running | succeeded | failed | expired
    # 1 while queued or running, NULL after: the unique index on (workspace, active) lets a
    # workspace hold one unfinished export whatever the concurrency (NULLs never collide).
    active = SmallIntegerField(null=True)
    # Customer numbers in full: the starter held calls:pii when it started the export.
    include_pii = BooleanField()
    requested_by = CharField()
    resources_total = IntegerField(default=0)
    resources_done = IntegerField(default=0)
    row_count = BigIntegerField(default=0)
    size_bytes = BigIntegerField(null=True)
    path = TextField(null=True)  # the zip under DATA_DIR/exports once written
    error = TextField(null=True)
    attempts = IntegerField(default=0)  # the claim's token: each claim adds one
    lease_until = DateTimeField(null=True)
    created_at = DateTimeField(default=utcnow)
    started_at = DateTimeField(null=True)
    finished_at = DateTimeField(null=True)
    expires_at = DateTimeField(null=True)
    updated_at = DateTimeField(default=utcnow)

    class Meta:
        table_name = "workspace_export"
        indexes = (
            (("workspace", "active"), True),
            # The list's order, newest first.
            (("workspace", "created_at", "id"), False),
            # The claim: unfinished exports by age; the purge: finished ones by expiry.
            (("active", "created_at", "id"), False),
            (("expires_at",), False),
        )
