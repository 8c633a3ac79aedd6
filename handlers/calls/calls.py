"""Calls: listCalls, getCall, deleteCall, exportCalls, and the call's wire shape (also used by the
tags and webhooks groups). A customer's phone number is personal data: shown whole only to a
caller holding calls:pii, else masked to its last four digits; the name the phone book gives it
(customerAlias) says as much, and is shown to the same callers only."""
from __future__ import annotations

from starlette.responses import StreamingResponse

from api.envelope import ok
from handlers.wire import deleted, iso, naive_utc
from models.calls import calls, export
from models.calls.calls import CallDetail, CallFilter, CallRecord
from models.identity.principal import Principal
from models.kernel.errors import Forbidden

# The payload's fields this service reads; the others are the sender's, shown under ``extra``.
REPORT_FIELDS = frozenset({
    "type", "callId", "workspaceId", "durationMs", "status", "callEndReasonCategory", "customer", "startedAt",
    "endedAt", "recordingUrl", "timestamp", "summary", "endedReason", "transcript", "agentId", "callType",
    "structuredData", "tags"})


def summary_shape(call: CallRecord, tags: list[str], principal: Principal) -> dict:
    return {
        "id": call.id,
        "workspaceId": call.workspace_id,
        "agentId": call.agent_id,
        "agentName": call.agent_name,
        "callType": call.call_type,
        "status": call.status,
        "callEndReasonCategory": call.call_end_reason_category,
        "endedReason": call.ended_reason,
        "customer": export.customer_number(call.customer, principal.permissions),
        # Who was called, by name: as personal as the number itself.
        "customerAlias": call.customer_alias if export.PII in principal.permissions else None,
        "startedAt": iso(call.started_at),
        "endedAt": iso(call.ended_at),
        "durationMs": call.duration_ms,
        "recordingUrl": call.recording_url,
        "summary": call.summary,
        "receivedAt": iso(call.received_at),
        "hasRecording": call.recording_bytes is not None,
        "transcriptionStatus": call.transcription_status,
        "tags": tags,
    }


def detail_shape(detail: CallDetail, principal: Principal) -> dict:
    call = detail.call
    return {
        **summary_shape(call, detail.tags, principal),
        "transcript": detail.transcript,
        "timestamp": iso(detail.sent_at),
        "structuredData": detail.structured_data,
        "ingestWarnings": detail.ingest_warnings,
        "extra": {key: value for key, value in detail.payload.items() if key not in REPORT_FIELDS},
        "recording": None if call.recording_bytes is None else {
            "contentType": detail.recording_content_type,
            "bytes": call.recording_bytes,
            "uploadedAt": iso(detail.recording_uploaded_at),
        },
        "transcription": None if call.transcription_status is None else {
            "status": call.transcription_status,
            "error": detail.transcription_error,
            "text": detail.transcription_text,
            "words": detail.transcription_words,
            "language": detail.transcription_language,
            "completedAt": iso(detail.transcribed_at),
        },
    }


def call_filter(principal: Principal, *, agentId=None, status=None, callType=None, since=None,
                until=None, tag=None, customer=None, q=None, sortBy="startedAt", sortOrder="desc") -> CallFilter:
    if customer is not None and export.PII not in principal.permissions:
        # Else a caller without it could find out whose number called, one guess at a time.
        raise Forbidden(f"Filtering by customer number needs the permission {export.PII}, "
                        "which the caller does not have.")
    return CallFilter(agent_id=agentId, status=status, call_type=callType,
                      started_from=naive_utc(since, "since"), started_to=naive_utc(until, "until"),
                      tag=tag, customer=customer, search=q, sort_by=sortBy, descending=sortOrder == "desc")


# Named one by one: a handler taking **kwargs would also be handed connexion's request context.
def list_calls(workspaceId: str, principal, limit: int = 20, offset: int = 0, agentId=None, status=None,
               callType=None, since=None, until=None, tag=None, customer=None, q=None,
               sortBy="startedAt", sortOrder="desc"):
    filters = call_filter(principal, agentId=agentId, status=status, callType=callType, since=since, until=until,
                          tag=tag, customer=customer, q=q, sortBy=sortBy,
                          sortOrder=sortOrder)
    page = calls.list_calls(workspace_id=workspaceId, filters=filters, limit=limit, offset=offset)
    return ok({"calls": [summary_shape(call, tags, principal) for call, tags in page.items],
               "pagination": page.pagination()})


def get_call(callId: str, workspaceId: str, principal):
    return ok({"call": detail_shape(calls.get_call(workspace_id=workspaceId, call_id=callId), principal)})


def delete_call(callId: str, workspaceId: str):
    calls.delete_call(workspace_id=workspaceId, call_id=callId)
    return deleted(callId, "Call deleted")


def _export_row(call: CallRecord, tags: list[str], transcript: str | None, principal: Principal) -> dict:
    shape = summary_shape(call, tags, principal)
    return {column: transcript if column == "transcript" else shape[column] for column in export.EXPORT_COLUMNS}


def export_calls(workspaceId: str, principal, format: str = "csv", agentId=None, status=None, callType=None,
                 since=None, until=None, tag=None, customer=None, q=None, sortBy="startedAt",
                 sortOrder="desc"):
    """The filtered calls as CSV or NDJSON, one row at a time (see models.calls.calls.iterate_calls)."""
    filters = call_filter(principal, agentId=agentId, status=status, callType=callType, since=since, until=until,
                          tag=tag, customer=customer, q=q, sortBy=sortBy,
                          sortOrder=sortOrder)
    rows = calls.iterate_calls(workspace_id=workspaceId, filters=filters)
    shaped = (_export_row(call, tags, transcript, principal) for call, tags, transcript in rows)
    if format == "ndjson":
        body, media_type = export.ndjson(shaped), "application/x-ndjson"
    else:
        body, media_type = export.csv_file(shaped), "text/csv; charset=utf-8"
    return StreamingResponse(body, media_type=media_type, headers={
        "Content-Disposition": f'attachment; filename="calls.{"ndjson" if format == "ndjson" else "csv"}"',
        "Cache-Control": "no-store"})
