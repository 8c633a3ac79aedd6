"""The periodic retention purge of an API process (models.calls.retention.purge_due), and the
forgetting of what is kept only for a while: client addresses' rate-limit counters of past days
(models.identity.rate_limits), the webhook-ids of signed reports (models.webhooks.replays), the
per-email sign-in counts whose window has ended and the expired sign-in challenges
(models.identity.sign_in), and the files of expired workspace exports (models.exports.exports).

One thread per process wakes every ``RETENTION_INTERVAL_S`` (0: never, in this process); on
PostgreSQL an advisory lock lets one process purge at a time, the others skip that round.
"""
from __future__ import annotations

import logging
import threading

from core.settings import Settings
from models.calls import retention
from models.exports import exports
from models.identity import rate_limits, sign_in
from models.webhooks import replays
from models.kernel.db import session

log = logging.getLogger(__name__)


class RetentionWorker:
    def __init__(self, settings: Settings) -> None:
        self.interval_s = settings.retention_interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self.interval_s > 0:
            self._thread = threading.Thread(target=self._run, name="retention", daemon=True)
            self._thread.start()

    def stop(self, wait_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(wait_s)

    def _run(self) -> None:
        # The first round after one interval: a process starting does not add a purge to its start.
        while not self._stop.wait(self.interval_s):
            try:
                with session():
                    done = retention.purge_due()
                for workspace_id, deleted in done.items():
                    log.info("retention purge of workspace %s deleted %d calls", workspace_id, deleted.calls)
                with session():
                    rate_limits.forget_past_addresses()
                    replays.forget_expired()
                    sign_in.forget_past_tries()
                    sign_in.forget_past_challenges()
                    exports.expire_due()
            except Exception:
                log.exception("the retention purge failed; it runs again in %g s", self.interval_s)
