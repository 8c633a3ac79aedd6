"""Calls imported from a file: importCalls (CSV or NDJSON of historical calls)."""
from __future__ import annotations

import connexion

from api.audit_trail import note
from api.envelope import ok
from models import call_recorded
from models.calls.imports import ImportReport
from models.kernel.errors import InvalidInput


def import_report_shape(report: ImportReport) -> dict:
    return {"imported": report.imported, "alreadyPresent": report.already_present,
            "failed": [{"line": f.line, **({"callId": f.call_id} if f.call_id is not None else {}),
                        "reason": f.reason} for f in report.failed],
            "warnings": [{"line": w.line, "callId": w.call_id, "recordedAs": w.recorded_as, "message": w.message}
                         for w in report.warnings]}


def import_calls(workspaceId: str, body=None):
    if not isinstance(body, bytes) or not body:
        raise InvalidInput("The request body must be a CSV file whose first line names the columns (callId, "
                           "startedAt, endedAt...), or NDJSON: one JSON object per line.")
    media_type = connexion.request.headers.get("content-type", "").split(";")[0].strip().lower()
    report = call_recorded.import_calls(workspace_id=workspaceId, body=body, media_type=media_type)
    note(imported=report.imported, alreadyPresent=report.already_present, failed=len(report.failed))
    return ok(import_report_shape(report), f"{report.imported} call(s) imported, {report.already_present} already "
                                           f"present, {len(report.failed)} row(s) failed")
