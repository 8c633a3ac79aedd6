"""Threads of an API process that push agent and workflow configurations to runtimes
(models.syncs.syncs).

Each thread claims the most overdue sync, reads what it pushes (the version's configuration, the
integration's URL and secret), POSTs it once under the outbound webhooks' rules
(api.webhook_delivery.exchange: checked addresses, WEBHOOK_TIMEOUT_S in all, no redirect, a bounded
answer) and stores the outcome; retries wait out a backoff from WEBHOOK_RETRY_BASE_S. No database
connection is held while the runtime answers. The lease a claim holds outlasts any attempt, so no
sync is POSTed by two workers at once; a process that dies mid-attempt leaves the sync to be taken
again when the lease runs out (the body carries the sync's id, the same in every attempt, for the
runtime's dedup), and past MAX_ATTEMPTS claims it fails.
"""
from __future__ import annotations

import logging

import orjson

from core.settings import Settings
from models.kernel.db import session
from models.syncs import syncs

from . import webhook_delivery
from .claiming_threads import ClaimingThreads
from .webhook_worker import lease_s

log = logging.getLogger("api.syncs")
POLL_S = 1.0
USER_AGENT = "voice-agent-backend-syncs/1"


def attempt(job: syncs.Claimed, *, timeout_s: float, retry_base_s: float) -> str | None:
    """One attempt of ``job``, its outcome stored; the sync's new status (None: no longer this worker's)."""
    if job.attempt > syncs.MAX_ATTEMPTS:
        with session():
            stored = syncs.fail(job, f"The sync stopped before it finished, {syncs.MAX_ATTEMPTS} times.")
        return "failed" if stored else None
    with session():
        request = syncs.payload(job)
    if isinstance(request, str):  # nothing to push: deleted meanwhile, or a secret that does not decrypt
        with session():
            return "failed" if syncs.fail(job, request) else None
    headers = {"content-type": "application/json", "accept": "application/json", "user-agent": USER_AGENT,
               "authorization": f"Bearer {request.secret}", "idempotency-key": job.sync_id}
    outcome = webhook_delivery.exchange("POST", request.url, headers, orjson.dumps(request.body),
                                        timeout_s=timeout_s)
    refused = outcome.error is not None and outcome.error.startswith(webhook_delivery.NOT_SENT)
    with session():
        return syncs.record(job, outcome, retry_base_s=retry_base_s, refused=refused)


class SyncWorkers(ClaimingThreads):
    def __init__(self, settings: Settings) -> None:
        super().__init__(settings.sync_workers, "syncs", POLL_S, log, due_table=syncs.TABLE)
        self.settings = settings

    def claim(self) -> syncs.Claimed | None:
        return syncs.claim(lease_s(self.settings.webhook_timeout_s))

    def work(self, job: syncs.Claimed) -> None:
        try:
            status = attempt(job, timeout_s=self.settings.webhook_timeout_s,
                             retry_base_s=self.settings.webhook_retry_base_s)
            if status is None:
                log.info("sync %s, attempt %d: its outcome is dropped, the sync is no longer this worker's",
                         job.sync_id, job.attempt)
            elif status != "succeeded":
                log.info("sync %s of %s %s, attempt %d: now %s", job.sync_id, job.entity_type, job.entity_id,
                         job.attempt, status)
        except Exception:
            log.exception("syncing %s failed; its lease will run out and it is tried again", job.sync_id)
