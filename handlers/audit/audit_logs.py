"""The workspace's audit log: listAuditLogs."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import iso, naive_utc
from models.audit import audit_log
from models.audit.audit_log import AuditRecord


def entry_shape(entry: AuditRecord) -> dict:
    return {"id": entry.id, "occurredAt": iso(entry.occurred_at),
            "actor": {"userId": entry.actor_user_id, "credentialId": entry.actor_credential_id,
                      "kind": entry.actor_kind},
            "operationId": entry.operation_id,
            "resource": {"type": entry.resource_type, "id": entry.resource_id},
            "requestId": entry.request_id, "sourceAddress": entry.source_address, "changes": entry.changes}


def list_audit_logs(workspaceId: str, limit: int = 20, offset: int = 0, actorUserId: str | None = None,
                    credentialId: str | None = None, operationId: str | None = None, resourceType: str | None = None,
                    resourceId: str | None = None, since: str | None = None, until: str | None = None):
    page = audit_log.list_entries(workspace_id=workspaceId, limit=limit, offset=offset, actor_user_id=actorUserId,
                              actor_credential_id=credentialId, operation_id=operationId,
                              resource_type=resourceType, resource_id=resourceId,
                              since=naive_utc(since, "since"), until=naive_utc(until, "until"))
    return ok({"logs": [entry_shape(e) for e in page.items], "pagination": page.pagination()})
