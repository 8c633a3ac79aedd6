"""Calls: listCalls, getCall, deleteCall, exportCalls, and the call's wire shape (also used by the
tags and webhooks groups). A customer's phone number is personal data: shown whole only to a
caller holding calls:pii, else masked to its last four digits."""
from __future__ import annotations

import csv
import io
from collections.abc import Iterator

import orjson
from starlette.responses import StreamingResponse

from api.envelope import ok
from models import calls
from models.calls import CallDetail, CallFilter, CallRecord
from models.errors import Forbidden
from models.principal import Principal

from .wire import iso, naive_utc

PII = "calls:pii"
# The payload's fields this service reads; the others are the sender's, shown under ``extra``.
REPORT_FIELDS = frozenset({
    "type", "callId", "workspaceId", "durationMs", "status", "callEndReasonCategory", "customer", "startedAt",
    "endedAt", "recordingUrl", "timestamp", "summary", "endedReason", "transcript", "agentId", "callType",
    "structuredData", "tags"})


def mask_phone(number: str | None) -> str | None:
    """Every digit but the last four replaced by '*': '+14155550123' → '+*******0123'."""
    if number is None:
        return None
    digits = sum(c.isdigit() for c in number)
    seen, out = 0, []
    for c in number:
        if c.isdigit():
            seen += 1
            out.append(c if seen > digits - 4 else "*")
        else:
            out.append(c)
    return "".join(out)


def _customer(number: str | None, principal: Principal) -> str | None:
    return number if PII in principal.permissions else mask_phone(number)


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
        "customer": _customer(call.customer, principal),
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
    if customer is not None and PII not in principal.permissions:
        # Else a caller without it could find out whose number called, one guess at a time.
        raise Forbidden(f"Filtering by customer number needs the permission {PII}, which the caller does not have.")
    return CallFilter(agent_id=agentId, status=status, call_type=callType,
                      started_from=naive_utc(since, "since"), started_to=naive_utc(until, "until"),
                      tag=tag, customer=customer, search=q, sort_by=sortBy, descending=sortOrder == "desc")


# Named one by one: a handler taking **kwargs would also be handed connexion's request context.
def list_calls(workspaceId: str, principal, limit: int = 20, offset: int = 0, agentId=None, status=None,
               callType=None, since=None, until=None, tag=None, customer=None, q=None,
               sortBy="startedAt", sortOrder="desc"):
    filters = call_filter(principal, agentId=agentId, status=status, callType=callType, since=since, until=until, tag=tag, customer=customer, q=q, sortBy=sortBy,
                          sortOrder=sortOrder)
    page = calls.list_calls(workspace_id=workspaceId, filters=filters, limit=limit, offset=offset)
    return ok({"calls": [summary_shape(call, tags, principal) for call, tags in page.items],
               "pagination": page.pagination()})


def get_call(callId: str, workspaceId: str, principal):
    return ok({"call": detail_shape(calls.get_call(workspace_id=workspaceId, call_id=callId), principal)})


def delete_call(callId: str, workspaceId: str):
    calls.delete_call(workspace_id=workspaceId, call_id=callId)
    return ok({"id": callId, "deleted": True}, "Call deleted")


_EXPORT_COLUMNS = ("id", "startedAt", "endedAt", "durationMs", "callType", "status", "endedReason",
                   "callEndReasonCategory", "agentId", "agentName", "customer", "tags", "summary", "recordingUrl",
                   "transcriptionStatus", "transcript")


def export_calls(workspaceId: str, principal, format: str = "csv", agentId=None, status=None, callType=None,
                 since=None, until=None, tag=None, customer=None, q=None, sortBy="startedAt",
                 sortOrder="desc"):
    """The filtered calls as CSV or NDJSON, one row at a time (see models.calls.iterate_calls)."""
    filters = call_filter(principal, agentId=agentId, status=status, callType=callType, since=since, until=until, tag=tag, customer=customer, q=q, sortBy=sortBy,
                          sortOrder=sortOrder)
    rows = calls.iterate_calls(workspace_id=workspaceId, filters=filters)
    if format == "ndjson":
        body, media_type = _ndjson(rows, principal), "application/x-ndjson"
    else:
        body, media_type = _csv(rows, principal), "text/csv; charset=utf-8"
    return StreamingResponse(body, media_type=media_type, headers={
        "Content-Disposition": f'attachment; filename="calls.{"ndjson" if format == "ndjson" else "csv"}"',
        "Cache-Control": "no-store"})


def _export_row(call: CallRecord, tags: list[str], transcript: str | None, principal: Principal) -> dict:
    shape = summary_shape(call, tags, principal)
    return {column: transcript if column == "transcript" else shape[column] for column in _EXPORT_COLUMNS}


def _ndjson(rows, principal) -> Iterator[bytes]:
    for call, tags, transcript in rows:
        yield orjson.dumps(_export_row(call, tags, transcript, principal)) + b"\n"


def _csv(rows, principal) -> Iterator[bytes]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(_EXPORT_COLUMNS)
    for call, tags, transcript in rows:
        row = _export_row(call, tags, transcript, principal)
        row["tags"] = ";".join(tags)
        writer.writerow([_csv_cell(row[column]) for column in _EXPORT_COLUMNS])
        if buffer.tell() > 65536:
            yield buffer.getvalue().encode()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue().encode()


def _csv_cell(value):
    """A cell a spreadsheet will not run as a formula (=, +, -, @ lead one): quoted with a '."""
    if value is None:
        return ""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value
