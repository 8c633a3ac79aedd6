"""Threads of an API process that write whole-workspace exports (models.exports.exports).

Each thread claims a due export (queued, or running under a lease that ran out because its worker
died), writes every resource of the workspace into a part file under DATA_DIR, a page of rows at a
time, storing its progress as it goes, while a timer renews the lease; then renames the part and
marks the export succeeded. An export deleted meanwhile, or taken over by another worker, is
dropped at its next progress. An unexpected error fails the attempt: the export is claimed again
once its lease runs out, and fails after MAX_ATTEMPTS claims.
"""
from __future__ import annotations

import logging

from core.settings import Settings
from models.exports import exports
from models.kernel.db import session

from .claiming_threads import ClaimingThreads, HeldLease

log = logging.getLogger("api.exports")
# How often an idle thread looks for an export.
POLL_S = 2.0


class ExportWorkers(ClaimingThreads):
    def __init__(self, settings: Settings) -> None:
        super().__init__(settings.export_workers, "export", POLL_S, log, due_table="workspace_export")
        self.lease_s = settings.export_lease_s

    def claim(self) -> exports.Claimed | None:
        return exports.claim(self.lease_s)

    def work(self, job: exports.Claimed) -> None:
        if job.attempt > exports.MAX_ATTEMPTS:
            with session():
                exports.fail(job, f"The export stopped before it finished, {exports.MAX_ATTEMPTS} times.")
            return
        held = HeldLease(job, lambda job: exports.renew(job, self.lease_s), self.lease_s, log,
                         f"export {job.export_id}")
        try:
            with held, session():
                path = exports.write(job, keep_going=lambda: not self.stopping)
                exports.complete(job, path)
        except exports.Stopped:
            log.info("export %s stopped: deleted, taken over, or this process is stopping", job.export_id)
        except Exception:
            log.exception("writing export %s failed; it is claimed again once its lease runs out", job.export_id)
