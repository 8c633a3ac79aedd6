"""Whole-workspace exports: startExport, listExports, getExport, downloadExport, deleteExport."""
from __future__ import annotations

from api.envelope import ok
from api.offload import in_session
from handlers.calls.call_recordings import recording_answer
from handlers.wire import deleted, iso
from models.exports import exports
from models.exports.exports import ExportRecord
from models.kernel.db import utcnow


def export_shape(record: ExportRecord) -> dict:
    return {"id": record.id, "workspaceId": record.workspace_id, "status": record.shown_status(utcnow()),
            "customerNumbersMasked": not record.include_pii, "requestedBy": record.requested_by,
            "progress": {"resourcesDone": record.resources_done, "resourcesTotal": record.resources_total,
                         "rows": record.row_count},
            "sizeBytes": record.size_bytes, "error": record.error, "createdAt": iso(record.created_at),
            "startedAt": iso(record.started_at), "finishedAt": iso(record.finished_at),
            "expiresAt": iso(record.expires_at)}


def start_export(workspaceId: str, principal):
    return ok({"export": export_shape(exports.start(principal, workspace_id=workspaceId))}, "Export queued")


def list_exports(workspaceId: str, limit: int = 20, offset: int = 0):
    page = exports.list_exports(workspace_id=workspaceId, limit=limit, offset=offset)
    return ok({"exports": [export_shape(e) for e in page.items], "pagination": page.pagination()})


def get_export(workspaceId: str, exportId: str):
    return ok({"export": export_shape(exports.get(workspace_id=workspaceId, export_id=exportId))})


async def download_export(workspaceId: str, exportId: str):
    opened = await in_session(exports.open_download, workspace_id=workspaceId, export_id=exportId)
    response = recording_answer(opened)
    response.headers["Content-Disposition"] = f'attachment; filename="{opened.file_name}"'
    return response


def delete_export(workspaceId: str, exportId: str):
    exports.delete(workspace_id=workspaceId, export_id=exportId)
    return deleted(exportId, "Export deleted")
