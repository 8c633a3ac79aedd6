"""Jobs announced due (models.kernel.leases.announce_due) wake the claiming threads of their table
in this process (api.claiming_threads) before their poll; a stopped thread hears no more."""
from __future__ import annotations

import logging
import threading

from api.claiming_threads import ClaimingThreads
from models.kernel import leases

TABLE = "a_test_job"


class Jobs(ClaimingThreads):
    def __init__(self) -> None:
        # A poll far longer than the test waits: a job is taken in time only if the announcement woke it.
        super().__init__(1, "test", 600.0, logging.getLogger("test"), due_table=TABLE)
        self.queued: list[str] = []
        self.done = threading.Event()
        self.claims = 0

    def claim(self):
        self.claims += 1
        return self.queued.pop() if self.queued else None

    def work(self, job) -> None:
        self.done.set()


def test_an_announced_job_is_taken_before_the_next_poll_and_not_after_stop(db):
    jobs = Jobs()
    jobs.start()
    try:
        for _ in range(100):  # the thread's first claim found nothing: it waits its poll
            if jobs.claims:
                break
            threading.Event().wait(0.05)
        assert jobs.claims == 1
        jobs.queued.append("job")
        leases.announce_due("another_table")
        assert not jobs.done.wait(0.5)
        leases.announce_due(TABLE)
        assert jobs.done.wait(30)
    finally:
        jobs.stop()
    assert jobs.wake not in leases._waiting.get(TABLE, [])
