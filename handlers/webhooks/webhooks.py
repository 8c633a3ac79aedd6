"""The webhooks group: receiveEndOfCallReport (what the call runtime posts when a call ends) and the
workspace's signing secrets that may sign it (createSigningSecret, listSigningSecrets)."""
from __future__ import annotations

import uuid

from api.envelope import ok
from handlers.wire import iso, naive_utc
from models import call_recorded
from models.calls.calls import Report
from models.kernel.errors import InvalidInput, WorkspaceMismatch
from models.webhooks import replays, signing_secrets


def receive_end_of_call_report(body: dict, principal, workspaceId: str | None = None):
    # The report names its workspace; the query may name it again (the admission checked the
    # caller against the query's, else the body's: api.authorization).
    report = report_from_wire(body, workspaceId)
    if principal.webhook_id is not None and not replays.first_receipt(workspace_id=report.workspace_id,
                                                                       webhook_id=principal.webhook_id):
        return ok({"callId": report.call_id, "created": False, "replayed": True, "ingestWarnings": []},
                  "This webhook-id was processed already; the report was not taken in again")
    outcome = call_recorded.record(report)
    message = "Call recorded" if outcome.created else "This report was recorded already"
    return ok({"callId": outcome.call_id, "created": outcome.created, "replayed": False,
               "ingestWarnings": outcome.warnings}, message)


def report_from_wire(body: dict, workspace_id: str | None) -> Report:
    """``workspace_id``: the query's, if it gave one."""
    if workspace_id is not None and body["workspaceId"] != workspace_id:
        raise WorkspaceMismatch(f"The report's workspaceId {body['workspaceId']!r} must equal the query's workspaceId "
                                f"{workspace_id!r}; or leave the query's out.")
    workspace_id = body["workspaceId"]
    for field in ("callId", "workspaceId", "agentId"):
        if body.get(field) is not None:
            _uuid(body[field], field)
    started_at, ended_at = naive_utc(body["startedAt"], "startedAt"), naive_utc(body["endedAt"], "endedAt")
    duration_ms = body.get("durationMs")
    if duration_ms is None:
        duration_ms = (ended_at - started_at).total_seconds() * 1000
    return Report(
        call_id=str(uuid.UUID(body["callId"])), workspace_id=workspace_id, started_at=started_at, ended_at=ended_at,
        duration_ms=float(duration_ms), agent_id=body.get("agentId"), call_type=body.get("callType"),
        status=body.get("status"), call_end_reason_category=body.get("callEndReasonCategory"),
        ended_reason=body.get("endedReason"), customer=body.get("customer"), recording_url=body.get("recordingUrl"),
        summary=body.get("summary"), transcript=body.get("transcript"),
        sent_at=naive_utc(body["timestamp"], "timestamp") if body.get("timestamp") is not None else None,
        structured_data=body.get("structuredData") or {}, tags=body.get("tags") or [], raw=body)


def _uuid(value: str, field: str) -> None:
    try:
        uuid.UUID(value)
    except ValueError:
        raise InvalidInput(f"{field} must be a UUID, such as 0b7c5c7e-3a52-4a55-9f57-6f0f1d6c1a2b.") from None


def secret_shape(record, *, current: bool) -> dict:
    return {"id": record.id, "description": record.description, "createdAt": iso(record.created_at),
            "createdBy": record.created_by, "expiresAt": iso(record.expires_at), "current": current}


def create_signing_secret(workspaceId: str, principal, body: dict):
    grace_s = body.get("graceSeconds", signing_secrets.DEFAULT_GRACE_S)
    record, secret, others = signing_secrets.rotate(principal, workspace_id=workspaceId, grace_s=grace_s,
                                                      description=body.get("description") or None)
    return ok({"signingSecret": {**secret_shape(record, current=True), "secret": secret},
               "previousSecrets": [secret_shape(r, current=False) for r in others]},
              "Signing secret created; it is shown this once")


def list_signing_secrets(workspaceId: str, limit: int = 20, offset: int = 0):
    # Only the secrets that verify now: the current one and those in their grace period, a few.
    rows = signing_secrets.valid_secrets(workspaceId)
    return ok({"signingSecrets": [secret_shape(r, current=r.expires_at is None) for r in rows[offset:offset + limit]],
               "pagination": {"total": len(rows), "limit": limit, "offset": offset}})
