"""Threads of an API process that take durable jobs from a table, one at a time.

Each thread claims a due job (the claim leases it, in the database, so no other thread or process
takes it), works on it, and claims again; with none due it waits ``poll_s``, or less when jobs of
its ``due_table`` were committed due in this process (models.kernel.leases.announce_due), or
``wake()`` is called. A failed claim (the database away for a
while) is logged and tried again at the next poll: the jobs wait in their table. Stopping claims
no more jobs and waits a little for the threads; a job under way that outlasts the wait is left
to its lease and taken again after a restart.
"""
from __future__ import annotations

import logging
import threading

from models.kernel import leases
from models.kernel.db import session


class ClaimingThreads:
    """``claim()`` (in a database session) and ``work(job)`` are the subclass's."""

    def __init__(self, count: int, name: str, poll_s: float, log: logging.Logger,
                 due_table: str | None = None) -> None:
        self.count, self.name, self.poll_s, self.log, self.due_table = count, name, poll_s, log, due_table
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._threads: list[threading.Thread] = []

    def claim(self):
        raise NotImplementedError

    def work(self, job) -> None:
        raise NotImplementedError

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def wake(self) -> None:
        self._wake.set()

    def start(self) -> None:
        if self.count and self.due_table:
            leases.on_due(self.due_table, self.wake)
        for n in range(self.count):
            thread = threading.Thread(target=self._run, name=f"{self.name}-{n}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, wait_s: float = 5.0) -> None:
        if self.due_table:
            leases.forget(self.due_table, self.wake)
        self._stop.set()
        self._wake.set()
        for thread in self._threads:
            thread.join(wait_s / max(1, len(self._threads)))

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with session():
                    job = self.claim()
            except Exception:
                self.log.exception("claiming a %s job failed", self.name)
                job = None
            if job is None:
                self._wake.wait(self.poll_s)
                self._wake.clear()
                continue
            self.work(job)


class HeldLease:
    """A claimed job's lease, renewed every third of it on a thread of its own while the work lasts:

        with HeldLease(job, lambda job: jobs.renew(job, lease_s), lease_s, log, "call 42") as held:
            ...work...                      # no database connection held
        jobs.complete(held.job, ...)        # stored under the latest claim's token

    ``renew(job)`` returns the renewed claim, or None once the row is no longer this worker's
    (finished, deleted, cancelled or taken over): renewing stops there, and the outcome stored
    under the stale token changes nothing. A failed renewal (the database away) is logged and tried
    again at the next third."""

    def __init__(self, job, renew, lease_s: float, log: logging.Logger, what: str) -> None:
        self.job, self._renew, self._lease_s, self._log, self._what = job, renew, lease_s, log, what
        # A renewal holds it from its write to the new token's assignment: see ``check``.
        self._renewing = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._keep, name=f"lease-{what}", daemon=True)

    def _keep(self) -> None:
        while not self._done.wait(self._lease_s / 3):
            with self._renewing:
                try:
                    with session():
                        renewed = self._renew(self.job)
                except Exception:
                    self._log.exception("renewing the lease of %s failed", self._what)
                    continue
                if renewed is None:
                    return
                self.job = renewed

    def check(self, test):
        """``test(job)`` with the current claim, no renewal in between: a test of the row against
        the claim's token made while a renewal had written the next token but not yet handed it
        over would take the worker's own renewal for a takeover."""
        with self._renewing:
            return test(self.job)

    def __enter__(self) -> "HeldLease":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()
