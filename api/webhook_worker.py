"""Threads of an API process that deliver outbound webhook events (models.webhooks.outbox).

Each thread claims the most overdue event, POSTs it (api.webhook_delivery) and stores the
outcome. An idle thread looks for due events every POLL_S, and at once when this process commits
new events (models.webhooks.outbox.notify_enqueued); events written by another process or host are
found at the next poll. The lease a claim holds outlasts any attempt (twice the total timeout
and a margin), so no event is POSTed by two workers at the same moment; a process that dies
mid-attempt leaves the event to be taken again when the lease runs out.
"""
from __future__ import annotations

import logging

import anyio
import anyio.to_thread

from core.settings import Settings
from models.kernel import encryption
from models.kernel.db import session, utcnow
from models.kernel.errors import NotFound
from models.webhooks import outbox, subscriptions

from . import webhook_delivery
from .claiming_threads import ClaimingThreads
from .offload import in_session

log = logging.getLogger("api.webhooks")
POLL_S = 0.5
# A test-fire's total time, kept within a client's patience; at most this many wait at once per
# process, more waiting their turn.
TEST_TIMEOUT_S = 15.0
TEST_SENDERS = 8


def lease_s(timeout_s: float) -> float:
    """A claim's lease: longer than any attempt of ``timeout_s`` can last, with a margin."""
    return 2 * timeout_s + 5


def send(job: outbox.Claimed, timeout_s: float) -> outbox.Outcome | None:
    """One attempt of ``job``; None if its subscription is gone."""
    try:
        with session():
            url, secrets = subscriptions.signing_secrets(job.workspace_id, job.subscription_id)
    except NotFound:
        return None
    except encryption.KeyMismatch:
        log.error("the signing secret of webhook subscription %s does not decrypt: this process's SECRET_KEY is "
                  "not the one it was made with (every process and host must share it)", job.subscription_id)
        return outbox.Outcome(utcnow(), False, None, 0.0, "Not sent: this server cannot decrypt the "
                                      "subscription's signing secret (its SECRET_KEY differs).", None)
    return webhook_delivery.post(url, job.event_id, job.payload, secrets, timeout_s=timeout_s)


async def test_fire(*, workspace_id: str, subscription_id: str) -> tuple[outbox.Outcome, outbox.EventRecord]:
    """A signed ping to the subscription's receiver, sent now, and its event as the delivery log
    keeps it. The wait for the receiver holds neither a handler thread nor a database connection:
    each step with the database runs in a thread of its own session, the POST in another."""
    job = await in_session(outbox.start_ping, workspace_id=workspace_id, subscription_id=subscription_id,
                            lease_s=lease_s(TEST_TIMEOUT_S))
    outcome = await anyio.to_thread.run_sync(send, job, TEST_TIMEOUT_S, limiter=_test_senders())
    if outcome is None:  # deleted meanwhile
        raise NotFound(f"No webhook subscription {subscription_id} in this workspace.")
    await in_session(outbox.record, job=job, outcome=outcome, retry_base_s=0)
    event = await in_session(outbox.get_event, workspace_id=workspace_id, event_id=job.event_id)
    return outcome, event.event


_limiter: anyio.CapacityLimiter | None = None


def _test_senders() -> anyio.CapacityLimiter:
    global _limiter
    if _limiter is None:  # made on first use, inside the event loop that uses it
        _limiter = anyio.CapacityLimiter(TEST_SENDERS)
    return _limiter


class WebhookWorkers(ClaimingThreads):
    def __init__(self, settings: Settings) -> None:
        # An attempt that outlasts the stop's wait is sent again after a restart (receivers dedup
        # on webhook-id).
        super().__init__(settings.webhook_workers, "webhooks", POLL_S, log, due_table=outbox.TABLE)
        self.settings = settings

    def claim(self) -> outbox.Claimed | None:
        return outbox.claim(lease_s(self.settings.webhook_timeout_s))

    def work(self, job: outbox.Claimed) -> None:
        try:
            outcome = send(job, self.settings.webhook_timeout_s)
            if outcome is None:
                return
            with session():
                status = outbox.record(job, outcome, retry_base_s=self.settings.webhook_retry_base_s)
            if status is None:
                log.info("webhook event %s, attempt %d: its outcome is dropped, the event is no longer this "
                         "worker's (deleted with its call or subscription, or taken by another worker)",
                         job.event_id, job.attempt)
            elif not outcome.succeeded:
                log.info("webhook event %s to subscription %s, attempt %d failed (%s); now %s", job.event_id,
                         job.subscription_id, job.attempt, outcome.error, status)
        except Exception:
            log.exception("delivering webhook event %s failed; its lease will run out and it is retried",
                          job.event_id)
