"""The outbox of outbound webhooks (models.webhooks.outbox) with a fixed clock: the backoff's bounds,
giving up after 24 hours, disabling a subscription that failed for 24 hours, leases that keep an
event from two workers at once and hand it on when a worker dies, and concurrent claimers."""
from __future__ import annotations

import random
import threading
import time
from datetime import timedelta

import pytest

from models.calls.calls import delete_call
from models.kernel import encryption
from models.kernel.db import session, utcnow
from models.webhooks import addresses, outbox, subscriptions
from models.webhooks.outbox import MAX_BACKOFF_S, RETRY_WINDOW_S, Outcome, backoff_s
from models.webhooks.tables import WebhookAttempt, WebhookEvent, WebhookSubscription
from tests.support import factories
from tests.support.threads import run_threads

LEASE_S = 35.0
BASE_S = 5.0


@pytest.fixture
def owner(db, tmp_path):
    encryption.configure("a key for tests", tmp_path)
    addresses.configure(allow_http=False, allow_private=False)
    return factories.workspace()


def subscription(owner) -> str:
    return factories.webhook_subscription(owner, "https://hooks.example.com/calls")[0]


def a_call_with_events(owner) -> str:
    return factories.call(owner)


def failed(at) -> Outcome:
    return Outcome(at, False, 500, 12.0, None, "down")


def succeeded(at) -> Outcome:
    return Outcome(at, True, 200, 12.0, None, "ok")


def event_row(event_id):
    with session():
        return WebhookEvent.get_by_id(event_id)


def test_backoff_is_full_jitter_doubling_from_the_base_and_capped_at_an_hour():
    rng = random.Random(7)
    for failures in range(1, 15):
        ceiling = min(MAX_BACKOFF_S, BASE_S * 2 ** failures)
        draws = [backoff_s(failures, BASE_S, rng) for _ in range(2000)]
        assert 0 <= min(draws) and max(draws) <= ceiling
        assert max(draws) > 0.95 * ceiling and min(draws) < 0.05 * ceiling  # the whole range is used
    first = [backoff_s(1, BASE_S, rng) for _ in range(20000)]
    assert abs(sum(first) / len(first) - BASE_S) < 0.1  # the first retry after about the base
    assert backoff_s(10_000, BASE_S, rng) <= MAX_BACKOFF_S


def test_an_event_is_claimed_once_per_lease_and_taken_again_when_the_lease_runs_out(owner):
    sub = subscription(owner)
    call_id = a_call_with_events(owner)
    now = utcnow()
    with session():
        job = outbox.claim(LEASE_S, now=now)
        assert job.subscription_id == sub and job.attempt == 1 and job.payload["callId"] == call_id
        assert outbox.claim(LEASE_S, now=now + timedelta(seconds=LEASE_S - 1)) is None
        # Its worker died mid-attempt: once the lease is over, another takes it, as attempt 2.
        again = outbox.claim(LEASE_S, now=now + timedelta(seconds=LEASE_S + 1))
        assert again.event_id == job.event_id and again.attempt == 2
        # The dead worker's late outcome is not stored; the live one's is.
        assert outbox.record(job, succeeded(now), retry_base_s=BASE_S) is None
        assert outbox.record(again, succeeded(now), retry_base_s=BASE_S) == "delivered"
        attempts = outbox.event_attempts(workspace_id=owner.workspace_id, event_id=job.event_id, limit=10,
                                                 offset=0)
    assert attempts.total == 2  # both attempts are in the log
    assert event_row(job.event_id).status == "delivered"


def test_a_failed_attempt_is_due_again_within_the_backoff_and_the_event_fails_after_24_hours(owner):
    subscription(owner)
    a_call_with_events(owner)
    start = utcnow()
    now, rng = start, random.Random(3)
    with session():
        while True:
            job = outbox.claim(LEASE_S, now=now)
            assert job is not None, "the event must be due at its next attempt"
            status = outbox.record(job, failed(now), retry_base_s=BASE_S, now=now, rng=rng)
            row = event_row(job.event_id)
            if status == "failed":
                break
            delay = (row.next_attempt_at - now).total_seconds()
            assert 0 <= delay <= min(MAX_BACKOFF_S, BASE_S * 2 ** job.attempt) + 1e-6
            assert outbox.claim(LEASE_S, now=now) is None  # not due before its time
            now = row.next_attempt_at
    assert now - start <= timedelta(seconds=RETRY_WINDOW_S)
    assert row.status == "failed" and row.last_error == "The receiver answered 500."
    assert job.attempt > 20  # retried all day long, at most an hour apart


def test_a_subscription_failing_every_attempt_for_24_hours_is_disabled_and_says_why(owner):
    sub = subscription(owner)
    # Failures are dated from 25 hours ago on: the events (made now) stay inside their retry window.
    start = utcnow() - timedelta(hours=25)
    due = utcnow() + timedelta(hours=2)  # every event is due by then
    calls = [a_call_with_events(owner) for _ in range(3)]
    assert len(calls) == 3

    def attempt(outcome, at):
        with session():
            job = outbox.claim(LEASE_S, now=due)
            outbox.record(job, outcome(at), retry_base_s=BASE_S, now=at)
            return subscriptions.get(workspace_id=owner.workspace_id, subscription_id=sub)

    assert attempt(failed, start).failing_since == start
    assert attempt(succeeded, start + timedelta(hours=2)).failing_since is None  # a success starts the count again
    later = start + timedelta(hours=3)
    for hours in (0, 12, 23.9):
        record = attempt(failed, later + timedelta(hours=hours))
        assert record.enabled and record.failing_since == later
    record = attempt(failed, later + timedelta(hours=24))
    assert not record.enabled and "every delivery attempt failed for 24 hours" in record.disabled_reason

    def statuses():
        with session():
            return sorted(e.status for e in outbox.list_events(workspace_id=owner.workspace_id, limit=10,
                                                                         offset=0).items)

    assert statuses() == ["delivered", "paused", "paused"]
    with session():
        assert outbox.claim(LEASE_S, now=due + timedelta(days=2)) is None
        subscriptions.update(workspace_id=owner.workspace_id, subscription_id=sub, enabled=True)
        record = subscriptions.get(workspace_id=owner.workspace_id, subscription_id=sub)
    assert record.enabled and record.disabled_reason is None and record.failing_since is None
    assert statuses() == ["delivered", "pending", "pending"]
    with session():
        assert outbox.claim(LEASE_S) is not None


def test_concurrent_claimers_never_share_an_event(owner):
    subscription(owner)
    calls = [a_call_with_events(owner) for _ in range(40)]

    def drain(_):
        taken = []
        while True:
            with session():
                job = outbox.claim(LEASE_S)
                if job is None:
                    return taken
                taken.append(job.payload["callId"])
                outbox.record(job, succeeded(utcnow()), retry_base_s=BASE_S)

    taken = [call_id for batch in run_threads(6, drain) for call_id in batch]
    assert sorted(taken) == sorted(calls)


def test_an_events_workspace_scopes_every_read(owner):
    subscription(owner)
    a_call_with_events(owner)
    stranger = factories.workspace()
    with session():
        (event,) = outbox.list_events(workspace_id=owner.workspace_id, limit=10, offset=0).items
        assert outbox.list_events(workspace_id=stranger.workspace_id, limit=10, offset=0).total == 0
        with pytest.raises(Exception, match="No webhook event"):
            outbox.get_event(workspace_id=stranger.workspace_id, event_id=event.id)
        with pytest.raises(Exception, match="No webhook event"):
            outbox.redeliver(workspace_id=stranger.workspace_id, event_id=event.id)


def test_a_subscription_deleted_while_a_call_is_recorded_neither_fails_the_ingest_nor_leaves_an_event(
        owner, monkeypatch):
    """The delete lands between the ingest's read of the subscriptions and its insert of their
    events: it waits for the ingest's commit, and then takes the new event with it."""
    import threading
    sub = subscription(owner)
    read = outbox._SUBSCRIBERS.records
    deleted = threading.Event()

    def read_then_delete(*args, **kwargs):
        rows = read(*args, **kwargs)

        def delete():
            with session():
                subscriptions.delete(workspace_id=owner.workspace_id, subscription_id=sub)
            deleted.set()

        threading.Thread(target=delete, daemon=True).start()
        deleted.wait(1.0)  # the delete waits for this transaction; without a lock it would be done
        return rows

    monkeypatch.setattr(outbox._SUBSCRIBERS, "records", read_then_delete)
    call_id = factories.call(owner)
    assert deleted.wait(15), "the delete never finished"
    with session():
        assert outbox.list_events(workspace_id=owner.workspace_id, limit=10, offset=0).total == 0
        assert WebhookEvent.select().where(WebhookEvent.call == call_id).count() == 0


@pytest.mark.parametrize("outcome", [succeeded, failed])
def test_the_outcome_of_an_event_deleted_with_its_call_meanwhile_is_dropped_and_leaves_nothing(owner, outcome):
    subscription(owner)
    call_id = a_call_with_events(owner)
    with session():
        job = outbox.claim(LEASE_S)
        delete_call(workspace_id=owner.workspace_id, call_id=call_id)
        assert outbox.record(job, outcome(utcnow()), retry_base_s=BASE_S) is None
        assert WebhookEvent.select().where(WebhookEvent.id == job.event_id).count() == 0
        assert WebhookAttempt.select().where(WebhookAttempt.event == job.event_id).count() == 0
        assert outbox.claim(LEASE_S) is None


# SQLite has one writer at a time: its transactions cannot deadlock on rows.
@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
@pytest.mark.parametrize("outcome, status, stored", [(failed, "paused", None), (succeeded, "delivered", "delivered")])
def test_an_outcome_stored_while_the_subscription_is_disabled_waits_for_it_instead_of_deadlocking(
        owner, db, outcome, status, stored):
    """A disable updates the subscription, then pauses its events; an attempt's outcome updates the
    event and the subscription's health. On PostgreSQL both take row locks: a failure's outcome takes
    the subscription's first, a delivery's clears the health after its event's commit; otherwise
    each waits for the other's (deadlock detected, one aborted). A failure waits for the disable and
    finds its event paused; a delivery is stored, then waits to clear the health."""
    import psycopg2
    subscription_id = subscription(owner)
    a_call_with_events(owner)
    with session():
        job = outbox.claim(LEASE_S)
        # Failing since a while: a delivery has the health to clear, so it too waits for the disable.
        WebhookSubscription.update(failing_since=utcnow()).where(WebhookSubscription.id == subscription_id).execute()
    disabling = psycopg2.connect(db)
    watcher = psycopg2.connect(db)
    watcher.autocommit = True  # each look a statement of its own: a transaction sees one snapshot of the activity
    try:
        with disabling.cursor() as cur:
            cur.execute("SET statement_timeout = '20s'")
            cur.execute("UPDATE webhook_subscription SET enabled = false WHERE id = %s", (subscription_id,))

            def store():
                with session():
                    return outbox.record(job, outcome(utcnow()), retry_base_s=BASE_S)

            thread_result: list = []
            thread = threading.Thread(target=lambda: thread_result.append(store()))
            thread.start()
            # The outcome's transaction waits on a row lock before the disable goes on.
            with watcher.cursor() as watch:
                for _ in range(200):
                    watch.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                  "AND wait_event_type = 'Lock'")
                    if watch.fetchone()[0]:
                        break
                    time.sleep(0.05)
                else:
                    pytest.fail("the outcome never waited for the disable's lock")
            cur.execute("UPDATE webhook_event SET status = 'paused' WHERE subscription_id = %s AND status = 'pending'",
                        (subscription_id,))
        disabling.commit()
    finally:
        disabling.close()
        watcher.close()
    thread.join(30)
    assert thread_result == [stored]
    with session():
        assert WebhookEvent.get_by_id(job.event_id).status == status
        healthy = WebhookSubscription.get_by_id(subscription_id).failing_since is None
        assert healthy == (stored == "delivered")
