"""Whole-workspace exports: started by a member who may change the workspace's settings, written
by a leased job (models.kernel.leases) into a zip under DATA_DIR, downloaded until they expire.

The rules: one export queued or running per workspace (a unique index on (workspace, active):
two starts at once get one export and one 409); at most MAX_KEPT exports kept per workspace
(409 past them: delete one); customer numbers in full only if the starter held calls:pii, as
recorded at the start. A worker claims a due export (queued, or running under a lease that ran
out: its worker died), leasing it and adding one to its attempts, the claim's token; it writes
each resource (models.exports.resources) into a part file, storing progress under that token,
and renames the part once complete. An outcome or progress under a stale token changes nothing,
and the worker drops its file. Past MAX_ATTEMPTS claims the export fails. A finished export
expires EXPORT_TTL_S after it finished: its download answers 410 at once, and the purge
(``expire_due``, run by the retention worker) deletes its file and marks it expired.
"""
from __future__ import annotations

import shutil
import zipfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import BinaryIO, NamedTuple

import orjson
from peewee import IntegrityError, fn

from models.calls.export import PII
from models.exports import resources
from models.exports.tables import WorkspaceExport
from models.identity.principal import Principal
from models.kernel.db import after_commit, database, new_id, utcnow
from models.kernel.errors import Conflict, DomainError, NotFound
from models.kernel.leases import LeasedWork, announce_due
from models.kernel.pagination import Page, workspace_list
from models.kernel.sql import Prepared

MAX_KEPT = 20
MAX_ATTEMPTS = 3
# How often a running export stores its progress: every this many rows, and after each resource.
PROGRESS_EVERY_ROWS = 5000
CONTENT_TYPE = "application/zip"

_E = WorkspaceExport
_ttl_s = 7 * 24 * 3600.0
_root: Path | None = None


def configure(data_dir, ttl_s: float) -> None:
    global _root, _ttl_s
    _root, _ttl_s = Path(data_dir) / "exports", ttl_s


class Gone(DomainError):
    status = 410
    code = "gone"


class ExportRecord(NamedTuple):
    id: str
    workspace_id: str
    status: str
    include_pii: bool
    requested_by: str
    resources_total: int
    resources_done: int
    row_count: int
    size_bytes: int | None
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    expires_at: datetime | None

    def shown_status(self, now: datetime) -> str:
        """Expired as soon as its time is past, before the purge deletes the file."""
        if self.status in ("succeeded", "failed") and self.expires_at is not None and self.expires_at <= now:
            return "expired"
        return self.status


_COLUMNS = (_E.id, _E.workspace, _E.status, _E.include_pii, _E.requested_by, _E.resources_total, _E.resources_done,
            _E.row_count, _E.size_bytes, _E.error, _E.created_at, _E.started_at, _E.finished_at, _E.expires_at)
_ONE = Prepared(lambda workspace_id, export_id: _E.in_workspace(workspace_id, *_COLUMNS).where(_E.id == export_id))
_PAGE = workspace_list(_E, _COLUMNS, order_by=(_E.created_at.desc(), _E.id.desc()))


def _directory(workspace_id: str) -> Path:
    if _root is None:
        raise RuntimeError("models.exports is not configured (core.boot does it)")
    directory = _root / workspace_id
    directory.mkdir(parents=True, exist_ok=True)
    return directory


# --- the API's side ------------------------------------------------------------------------------

def start(principal: Principal, *, workspace_id: str) -> ExportRecord:
    """A new export, queued; Conflict while another of the workspace's is queued or running, or
    when it keeps MAX_KEPT already."""
    with database.atomic():
        kept = _E.in_workspace(workspace_id, fn.COUNT(_E.id)).where(_E.status != "expired").scalar()
        if kept >= MAX_KEPT:
            raise Conflict(f"This workspace keeps {MAX_KEPT} exports already; delete one before starting another.")
        try:
            with database.atomic():
                export_id = new_id()
                _E.insert(id=export_id, workspace=workspace_id, status="queued", active=1,
                          include_pii=PII in principal.permissions, requested_by=principal.user_id,
                          resources_total=len(resources.exported())).execute()
        except IntegrityError:
            running = _E.in_workspace(workspace_id, _E.id).where(_E.active == 1).scalar()
            raise Conflict(f"Export {running or 'another'} of this workspace is still queued or running; wait for it "
                           "to finish (GET /exports/{exportId}) before starting another.") from None
    after_commit(lambda: announce_due(_E._meta.table_name))
    return get(workspace_id=workspace_id, export_id=export_id)


def list_exports(*, workspace_id: str, limit: int, offset: int) -> Page[ExportRecord]:
    """Newest first; one statement per page."""
    return _PAGE.page(ExportRecord, workspace_id=workspace_id, limit=limit, offset=offset)


def get(*, workspace_id: str, export_id: str) -> ExportRecord:
    record = _ONE.first(ExportRecord, workspace_id=workspace_id, export_id=export_id)
    if record is None:
        raise NotFound(f"No export {export_id} in this workspace.")
    return record


class OpenExport(NamedTuple):
    file: BinaryIO
    content_type: str
    file_name: str


def open_download(*, workspace_id: str, export_id: str, now: datetime | None = None) -> OpenExport:
    """The export's zip, open; the caller closes it. Conflict before it succeeded, Gone once expired."""
    now = now or utcnow()
    row = _E.in_workspace(workspace_id, _E.status, _E.path, _E.expires_at).where(_E.id == export_id).tuples().first()
    if row is None:
        raise NotFound(f"No export {export_id} in this workspace.")
    status, path, expires_at = row
    if status == "expired" or (expires_at is not None and expires_at <= now):
        raise Gone(f"Export {export_id} has expired and its file was deleted; start a new export.")
    if status != "succeeded" or path is None:
        raise Conflict(f"Export {export_id} is {status}: only a succeeded export can be downloaded.")
    try:
        return OpenExport(open(path, "rb"), CONTENT_TYPE, f"export-{export_id}.zip")
    except FileNotFoundError:
        raise Gone(f"Export {export_id}'s file was deleted meanwhile; start a new export.") from None


def delete(*, workspace_id: str, export_id: str) -> None:
    """The export gone, and its file once that has committed; a running one stops at its next
    progress (its worker finds the row gone and drops its part file)."""
    with database.atomic():
        path = _E.in_workspace(workspace_id, _E.path).where(_E.id == export_id).scalar()
        if not _E.delete().where((_E.workspace == workspace_id) & (_E.id == export_id)).execute():
            raise NotFound(f"No export {export_id} in this workspace.")
    if path:
        after_commit(lambda: Path(path).unlink(missing_ok=True))


def delete_workspace_files(workspace_id: str) -> None:
    """A deleted workspace's exports directory, part files included, once the deletion has committed
    (its rows go with the workspace's)."""
    if _root is not None:
        root = _root
        after_commit(lambda: shutil.rmtree(root / workspace_id, ignore_errors=True))


def expire_due(now: datetime | None = None) -> int:
    """Finished exports past their expiry: marked expired, their files deleted after commit."""
    now = now or utcnow()
    with database.atomic():
        due = list(_E.select(_E.id, _E.path).where(
            (_E.expires_at <= now) & (_E.status.in_(("succeeded", "failed")))).limit(1000).tuples())
        if not due:
            return 0
        _E.update(status="expired", path=None, updated_at=now).where(
            _E.id.in_([d[0] for d in due]) & _E.status.in_(("succeeded", "failed"))).execute()
    paths = [d[1] for d in due if d[1]]
    after_commit(lambda: [Path(p).unlink(missing_ok=True) for p in paths])
    return len(due)


# --- the worker's side ---------------------------------------------------------------------------

class Claimed(NamedTuple):
    export_id: str
    workspace_id: str
    attempt: int  # the claim's token: a renewal, progress or an outcome holds only for it
    include_pii: bool


_JOBS = LeasedWork(
    table="workspace_export", key="id",
    due="w.active = 1 AND (w.lease_until IS NULL OR w.lease_until < {p})",
    order="w.active, w.created_at, w.id",
    claim_sets="status = 'running', lease_until = {p}, attempts = attempts + 1, started_at = {p}, "
               "resources_done = 0, row_count = 0, updated_at = {p}",
    returning="id, workspace_id, attempts, include_pii", token="attempts")


def claim(lease_s: float, now: datetime | None = None) -> Claimed | None:
    """The oldest due export, leased to the caller for ``lease_s`` seconds, or None."""
    now = now or utcnow()
    row = _JOBS.claim(now + timedelta(seconds=lease_s), now, now, now)
    return None if row is None else Claimed(row[0], row[1], row[2], bool(row[3]))


def renew(job: Claimed, lease_s: float) -> Claimed | None:
    if not _JOBS.renew(job.export_id, token=job.attempt, until=utcnow() + timedelta(seconds=lease_s)):
        return None
    return job


def _mine(job: Claimed):
    return (_E.id == job.export_id) & (_E.status == "running") & (_E.attempts == job.attempt)


def progress(job: Claimed, *, resources_done: int, row_count: int) -> bool:
    """Stored under the claim's token; False once the export is no longer this worker's."""
    with database.atomic():
        return bool(_E.update(resources_done=resources_done, row_count=row_count, updated_at=utcnow())
                    .where(_mine(job)).execute())


def fail(job: Claimed, error: str, now: datetime | None = None) -> bool:
    now = now or utcnow()
    with database.atomic():
        return bool(_E.update(status="failed", active=None, error=error, lease_until=None, finished_at=now,
                              expires_at=now + timedelta(seconds=_ttl_s), updated_at=now)
                    .where(_mine(job)).execute())


class Stopped(Exception):
    """The export is no longer this worker's (deleted, or taken over after its lease ran out)."""


def write(job: Claimed, keep_going=lambda: True) -> Path:
    """Every resource of the workspace into the export's zip: a part file of this attempt, renamed
    once complete. Raises Stopped (the part deleted) when the export is no longer this worker's
    or ``keep_going()`` turns false (the process stops). Needs a database session."""
    directory = _directory(job.workspace_id)
    for stale in directory.glob(f"{job.export_id}.*.part"):
        # An earlier attempt's, whose worker died; a later one's is that worker's own.
        if stale.suffixes[-2][1:].isdigit() and int(stale.suffixes[-2][1:]) < job.attempt:
            stale.unlink(missing_ok=True)
    part = directory / f"{job.export_id}.{job.attempt}.part"
    final = directory / f"{job.export_id}.zip"
    done, rows, manifest = 0, 0, []
    try:
        with zipfile.ZipFile(part, "w", compression=zipfile.ZIP_DEFLATED, allowZip64=True) as archive:
            for resource in resources.exported():
                count = 0
                with archive.open(resource.file_name, "w", force_zip64=True) as out:
                    for row in resources.rows(resource, job.workspace_id):
                        out.write(resources.ndjson_line(resources.masked(resource, row, job.include_pii)))
                        count += 1
                        if (rows + count) % PROGRESS_EVERY_ROWS == 0:
                            if not keep_going() or not progress(job, resources_done=done, row_count=rows + count):
                                raise Stopped()
                rows += count
                done += 1
                manifest.append({"file": resource.file_name, "table": resource.model._meta.table_name,
                                 "rows": count})
                if not keep_going() or not progress(job, resources_done=done, row_count=rows):
                    raise Stopped()
            archive.writestr("manifest.json", orjson.dumps({
                "exportId": job.export_id, "workspaceId": job.workspace_id,
                "customerNumbersMasked": not job.include_pii, "resources": manifest,
                "excludedTables": sorted(resources.EXCLUDED_TABLES),
                "excludedColumns": sorted(f"{t}.{c}" for t, c in resources.EXCLUDED_COLUMNS)},
                option=orjson.OPT_INDENT_2))
        part.replace(final)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    return final


def complete(job: Claimed, path: Path, now: datetime | None = None) -> bool:
    """Succeeded, its file and size stored under the claim's token; else (no longer this worker's)
    the file is deleted and False returned."""
    now = now or utcnow()
    with database.atomic():
        stored = _E.update(status="succeeded", active=None, path=str(path), size_bytes=path.stat().st_size,
                           resources_done=_E.resources_total, lease_until=None, error=None, finished_at=now,
                           expires_at=now + timedelta(seconds=_ttl_s), updated_at=now).where(_mine(job)).execute()
    if not stored:
        path.unlink(missing_ok=True)
    return bool(stored)
