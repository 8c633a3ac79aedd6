"""Data retention: calls, with their recordings and transcripts, older than a workspace keeps them.

A workspace's ``settings.dataRetentionDays`` (None: keep for ever) decides. The API processes
run ``purge_due`` periodically (api.retention_worker, every ``RETENTION_INTERVAL_S``); a caller
with ``retention:purge`` runs ``purge`` on demand, or counts what it would delete (dry run).
A call is old by when it started. Every purge that deletes something is in the audit log: the
periodic one as the system's, the one on demand with the request that asked for it.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import NamedTuple

from models.audit import audit_log
from models.calls.calls import Purged, purge_started_before
from models.kernel.db import database, is_postgres, utcnow
from models.kernel.errors import InvalidInput
from models.kernel.scoping import Workspace

# Serialises the periodic purge across processes on PostgreSQL (SQLite has one writer anyway).
_PG_LOCK_ID = 7_242_014


class Outcome(NamedTuple):
    cutoff: datetime
    days: int
    dry_run: bool
    deleted: Purged


def purge(*, workspace_id: str, now: datetime | None = None, dry_run: bool = False,
          older_than_days: int | None = None) -> Outcome:
    now = now or utcnow()
    days = older_than_days
    if days is None:
        days = Workspace.select(Workspace.data_retention_days).where(Workspace.id == workspace_id).scalar()
    if days is None:
        raise InvalidInput("This workspace keeps its calls (settings.dataRetentionDays is null): give olderThanDays, "
                           "or set the workspace's retention first.")
    cutoff = now - timedelta(days=days)
    return Outcome(cutoff, days, dry_run,
                   purge_started_before(workspace_id=workspace_id, cutoff=cutoff, dry_run=dry_run))


def purge_due(*, now: datetime | None = None) -> dict[str, Purged]:
    """Every workspace's purge by its own retention; what each deleted (workspaces with nothing to
    delete left out). Records a system audit entry for each purge that deleted something."""
    now = now or utcnow()
    if is_postgres() and not database.execute_sql("SELECT pg_try_advisory_lock(%s)", (_PG_LOCK_ID,)).fetchone()[0]:
        return {}  # another process is purging now
    try:
        done = {}
        workspaces = list(Workspace.select(Workspace.id, Workspace.data_retention_days)
                          .where(Workspace.data_retention_days.is_null(False)).tuples())
        for workspace_id, days in workspaces:
            outcome = purge(workspace_id=workspace_id, now=now, older_than_days=days)
            if outcome.deleted.calls:
                done[workspace_id] = outcome.deleted
                audit_log.record(workspace_ids=[workspace_id], actor=audit_log.SYSTEM,
                                 operation_id="scheduledRetentionPurge", resource_type="calls", resource_id=None,
                                 now=now, changes={"olderThanDays": days, "cutoff": outcome.cutoff.isoformat() + "Z",
                                                   "deleted": outcome.deleted._asdict()})
        return done
    finally:
        if is_postgres():
            database.execute_sql("SELECT pg_advisory_unlock(%s)", (_PG_LOCK_ID,))
