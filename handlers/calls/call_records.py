"""Call detail records: listCallDetailRecords, a billing-grade line per call, streamed."""
from __future__ import annotations

from starlette.responses import StreamingResponse

from handlers.wire import naive_utc
from models.billing import cdr
from models.calls import export


def list_call_detail_records(workspaceId: str, principal, since=None, until=None, format: str = "csv",
                             agentId=None, direction=None):
    filters = cdr.CdrFilter(since=naive_utc(since, "since"), until=naive_utc(until, "until"), agent_id=agentId,
                            direction=direction)
    records = cdr.records(workspace_id=workspaceId, filters=filters, permissions=principal.permissions)
    if format == "ndjson":
        body, media_type = export.ndjson(records), "application/x-ndjson"
    else:
        body, media_type = export.csv_file(records, cdr.COLUMNS), "text/csv; charset=utf-8"
    return StreamingResponse(body, media_type=media_type, headers={
        "Content-Disposition": f'attachment; filename="call-records.{"ndjson" if format == "ndjson" else "csv"}"',
        "Cache-Control": "no-store"})
