"""The audit log's table: one entry per change, written in the change's transaction (models.audit.audit_log)."""
from __future__ import annotations

from peewee import AutoField, CharField, DateTimeField

from models.kernel.db import JSONField, utcnow
from models.kernel.scoping import WorkspaceScoped


class AuditEntry(WorkspaceScoped):
    id = AutoField()
    occurred_at = DateTimeField(default=utcnow)
    actor_user_id = CharField(null=True)
    actor_credential_id = CharField(null=True)
    # access_token, api_key, signing_secret, invitation (an acceptance), or system (a periodic job).
    actor_kind = CharField()
    operation_id = CharField()
    resource_type = CharField()
    resource_id = CharField(null=True)
    request_id = CharField(null=True)
    source_address = CharField(null=True)
    changes = JSONField()

    class Meta:
        indexes = ((("workspace", "occurred_at", "id"), False),
                   (("workspace", "actor_user_id", "occurred_at"), False))
