"""The outbox of outbound webhook events, and the log of their delivery attempts.

An event is a row, written in the transaction that records its call (``enqueue_call``), one per
enabled subscription of the call's workspace that takes its type: no event without its call, no
call without its events. Delivery is at least once:

- A worker claims the most overdue event (models.kernel.leases) with one UPDATE whose subquery picks it (FOR UPDATE SKIP
  LOCKED on PostgreSQL, so workers in several processes take different events; SQLite has one
  writer at a time) and sets a lease longer than an attempt can last: no other worker takes the
  event while it is POSTed, and if the worker's process dies, the lease runs out and another
  takes it. The claim counts the attempt; an outcome is stored only by the claim whose count it
  holds, so a late outcome of a lease that ran out changes nothing.
- A failed attempt is retried after a delay drawn with full jitter: the nth retry within
  [0, min(MAX_BACKOFF_S, base * 2^n)] seconds (base: ``WEBHOOK_RETRY_BASE_S``), until the event's
  ``give_up_at`` (RETRY_WINDOW_S after it was made or redelivered by hand), when it is failed.
- Every attempt is logged: status, latency, error, the first 1 KB of the response.

Events of a disabled subscription are paused (the claim never looks at them) and become due again
when it is enabled; a subscription that failed every attempt for FAILING_DISABLE_S is disabled.
"""
from __future__ import annotations

import functools
import random
from datetime import datetime, timedelta
from typing import NamedTuple

from peewee import (
    IntegrityError,
    fn,
)

from models.kernel import leases
from models.kernel.db import database, is_postgres, new_id, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.leases import LeasedWork, announce_due
from models.kernel.pagination import Page, PageQuery, workspace_list
from models.kernel.sql import Prepared, Statement
from models.webhooks.tables import WebhookAttempt, WebhookEvent, WebhookSubscription

EVENT_STATUSES = ("pending", "delivered", "failed", "paused")
RETRY_WINDOW_S = 24 * 3600
MAX_BACKOFF_S = 3600.0
RESPONSE_KEEP_BYTES = 1024
# A subscription whose every attempt failed for this long is disabled.
FAILING_DISABLE_S = 24 * 3600


class EventRecord(NamedTuple):
    id: str
    workspace_id: str
    subscription_id: str
    event_type: str
    call_id: str | None
    status: str
    attempts: int
    next_attempt_at: datetime | None
    give_up_at: datetime
    last_error: str | None
    created_at: datetime
    delivered_at: datetime | None


class EventDetail(NamedTuple):
    event: EventRecord
    payload: dict


class AttemptRecord(NamedTuple):
    id: int
    event_id: str
    subscription_id: str
    attempt: int
    started_at: datetime
    succeeded: bool
    status_code: int | None
    latency_ms: float
    error: str | None
    response_body: str | None


class Claimed(NamedTuple):
    event_id: str
    workspace_id: str
    subscription_id: str
    event_type: str
    payload: dict
    attempt: int  # this claim's count: its outcome is stored only while the event holds it
    give_up_at: datetime


class Outcome(NamedTuple):
    """What one attempt came to, as the sender saw it."""
    started_at: datetime
    succeeded: bool
    status_code: int | None
    latency_ms: float
    error: str | None
    response_body: str | None


# --- writing events ---------------------------------------------------------------------------

def notify_enqueued() -> None:
    """Events were committed due: this process's delivery workers claim them at once."""
    announce_due(TABLE)


def _subscribers(workspace_id):
    query = WebhookSubscription.in_workspace(workspace_id, WebhookSubscription.id, WebhookSubscription.events).where(
        WebhookSubscription.enabled == True)  # noqa: E712
    # The lock the events' foreign key takes anyway, taken at the read: a subscription deleted
    # between this read and the insert would otherwise fail the ingest. The delete waits instead.
    return query.for_update("FOR KEY SHARE") if is_postgres() else query


_SUBSCRIBERS = Prepared(_subscribers)


class _Subscriber(NamedTuple):
    id: str
    events: list[str]


def enqueue_call(*, workspace_id: str, call_id: str, payload: dict, event_type: str = "end-of-call-report",
                 now: datetime | None = None) -> int:
    """An event for each enabled subscription of the workspace that takes ``event_type``; in the
    caller's transaction (the one that records the call). Returns how many."""
    now = now or utcnow()
    targets = [s.id for s in _SUBSCRIBERS.records(_Subscriber, workspace_id=workspace_id) if event_type in s.events]
    if targets:
        WebhookEvent.insert_many([
            {"id": new_id(), "workspace": workspace_id, "subscription": subscription_id, "event_type": event_type,
             "call": call_id, "payload": payload, "status": "pending", "attempts": 0, "next_attempt_at": now,
             "give_up_at": now + timedelta(seconds=RETRY_WINDOW_S), "created_at": now}
            for subscription_id in targets]).execute()
    return len(targets)


def start_ping(*, workspace_id: str, subscription_id: str, lease_s: float, now: datetime | None = None) -> Claimed:
    """A ``ping`` event, claimed by the caller to send at once; it is not retried and does not
    count in the subscription's failures."""
    now = now or utcnow()
    if not WebhookSubscription.in_workspace(workspace_id).where(WebhookSubscription.id == subscription_id).exists():
        raise NotFound(f"No webhook subscription {subscription_id} in this workspace.")
    payload = {"type": "ping", "subscriptionId": subscription_id, "workspaceId": workspace_id}
    event_id = new_id()
    try:
        with database.atomic():
            WebhookEvent.insert(id=event_id, workspace=workspace_id, subscription=subscription_id, event_type="ping",
                                payload=payload, status="pending", attempts=1,
                                next_attempt_at=now + timedelta(seconds=lease_s),
                                lease_until=now + timedelta(seconds=lease_s), give_up_at=now, created_at=now).execute()
    except IntegrityError:  # deleted since the check
        raise NotFound(f"No webhook subscription {subscription_id} in this workspace.") from None
    return Claimed(event_id, workspace_id, subscription_id, "ping", payload, 1, now)


# --- delivering -------------------------------------------------------------------------------

# The most overdue event of an enabled subscription. Moving next_attempt_at to the lease's end
# keeps events under way out of the due range that the next claim scans.
TABLE = WebhookEvent._meta.table_name
_EVENTS = LeasedWork(
    table=TABLE, key="id",
    due="w.status = 'pending' AND w.next_attempt_at <= {p} "
        "AND EXISTS (SELECT 1 FROM webhook_subscription s WHERE s.id = w.subscription_id AND s.enabled)",
    order="w.next_attempt_at",
    claim_sets="attempts = attempts + 1, lease_until = {p}, next_attempt_at = {p}",
    returning="id, workspace_id, subscription_id, event_type, payload, attempts, give_up_at",
    token="attempts")


def claim(lease_s: float, now: datetime | None = None) -> Claimed | None:
    """The most overdue event of an enabled subscription, leased to the caller for ``lease_s``, or None."""
    now = now or utcnow()
    until = now + timedelta(seconds=lease_s)
    row = _EVENTS.claim(until, until, now)
    if row is None:
        return None
    return Claimed(row[0], row[1], row[2], row[3], WebhookEvent.payload.python_value(row[4]), row[5],
                   WebhookEvent.give_up_at.python_value(row[6]))


def backoff_s(failures: int, base_s: float, rng: random.Random | None = None) -> float:
    """The delay before the retry that follows the ``failures``-th failed attempt (models.kernel.leases),
    at most MAX_BACKOFF_S."""
    return leases.backoff_s(failures, base_s, MAX_BACKOFF_S, rng)


def record(job: Claimed, outcome: Outcome, *, retry_base_s: float, now: datetime | None = None,
           rng: random.Random | None = None) -> str | None:
    """Log the attempt and move the event on: delivered, due again after a backoff, or failed
    past its ``give_up_at``. A ping is never retried and leaves the subscription's health alone.
    Returns the event's new status, or None if the claim is no longer the event's (the lease ran
    out and another worker took it, or the subscription was disabled meanwhile) or the event is
    gone (deleted with its call or its subscription while it was sent): then nothing is logged."""
    now = now or utcnow()
    E, S = WebhookEvent, WebhookSubscription
    mine = (E.id == job.event_id) & (E.attempts == job.attempt) & (E.status == "pending")
    health = job.event_type != "ping"
    with database.atomic():
        # A failed attempt updates the subscription's health (and may disable it) in this
        # transaction: its row is locked before the event's, in the order that disabling it (its
        # row, then pausing its events) and deleting it (cascading to them) take. The other way
        # round deadlocks with a disable.
        if health and not outcome.succeeded and _SUBSCRIPTION_HELD[is_postgres()].one(job.subscription_id) is None:
            return None
        # The event's row locked next, as the update below would, so that a delete of its call
        # (cascading to it) waits for the attempt's entry, then takes it along, instead of leaving
        # it a dangling reference; SQLite's transactions hold the write lock.
        if _EVENT_HELD[is_postgres()].one(job.event_id) is None:
            return None
        WebhookAttempt.insert(workspace=job.workspace_id, event=job.event_id, subscription=job.subscription_id,
                              attempt=job.attempt, started_at=outcome.started_at, succeeded=outcome.succeeded,
                              status_code=outcome.status_code, latency_ms=round(outcome.latency_ms, 3),
                              error=outcome.error, response_body=outcome.response_body).execute()
        if outcome.succeeded:
            status = "delivered"
            changed = E.update(status=status, delivered_at=now, lease_until=None, last_error=None).where(mine).execute()
        else:
            next_at = now + timedelta(seconds=backoff_s(job.attempt, retry_base_s, rng))
            status = "failed" if next_at > job.give_up_at else "pending"
            changed = E.update(status=status, next_attempt_at=next_at, lease_until=None,
                               last_error=_error_summary(outcome)).where(mine).execute()
            if health:
                _count_failure(job.subscription_id, now)
    if outcome.succeeded and health:
        # The subscription is healthy again: in a statement of its own, after the event's, so that
        # deliveries to one subscription do not queue on its row (a failure counted in between
        # is cleared with it, as the next delivery would clear it).
        S.update(failing_since=None).where((S.id == job.subscription_id) & S.failing_since.is_null(False)).execute()
    return status if changed else None


_EVENT_HELD = {postgres: Statement("SELECT 1 FROM webhook_event WHERE id = {p}"
                                   + (" FOR NO KEY UPDATE" if postgres else "")) for postgres in (True, False)}
_SUBSCRIPTION_HELD = {postgres: Statement("SELECT 1 FROM webhook_subscription WHERE id = {p}"
                                          + (" FOR NO KEY UPDATE" if postgres else "")) for postgres in (True, False)}


def _error_summary(outcome: Outcome) -> str:
    return outcome.error or f"The receiver answered {outcome.status_code}."


def _count_failure(subscription_id: str, now: datetime) -> None:
    S = WebhookSubscription
    S.update(failing_since=now).where((S.id == subscription_id) & S.failing_since.is_null()).execute()
    since = now - timedelta(seconds=FAILING_DISABLE_S)
    reason = (f"Disabled at {now.isoformat(timespec='seconds')}Z: every delivery attempt failed for "
              f"{FAILING_DISABLE_S // 3600} hours. Fix the receiver, then enable the subscription again.")
    if S.update(enabled=False, disabled_reason=reason, updated_at=now).where(
            (S.id == subscription_id) & (S.enabled == True) & (S.failing_since <= since)).execute():  # noqa: E712
        pause(subscription_id)


def pause(subscription_id: str) -> None:
    """The subscription's waiting events set aside (it was disabled); an attempt under way keeps
    its lease, and its outcome is not stored."""
    WebhookEvent.update(status="paused").where(
        (WebhookEvent.subscription == subscription_id) & (WebhookEvent.status == "pending")).execute()


def resume(subscription_id: str, now: datetime | None = None) -> None:
    """The subscription's paused events due now, with a new retry window (it was enabled again)."""
    now = now or utcnow()
    WebhookEvent.update(status="pending", next_attempt_at=now, lease_until=None,
                        give_up_at=now + timedelta(seconds=RETRY_WINDOW_S)).where(
        (WebhookEvent.subscription == subscription_id) & (WebhookEvent.status == "paused")).execute()


def redeliver(*, workspace_id: str, event_id: str, now: datetime | None = None) -> EventRecord:
    """The event due now, whatever became of it, with a new retry window. An attempt under way
    keeps its lease (no second POST of the event at the same moment)."""
    now = now or utcnow()
    E = WebhookEvent
    with database.atomic():
        query = E.in_workspace(workspace_id, E.id, E.event_type, E.lease_until, E.subscription).where(E.id == event_id)
        row = (query.for_update() if is_postgres() else query).first()
        if row is None:
            raise NotFound(f"No webhook event {event_id} in this workspace.")
        if row.event_type == "ping":
            raise InvalidInput("A ping is not redelivered; send another with POST /webhooks/subscriptions/"
                               "{subscriptionId}/test.")
        enabled = WebhookSubscription.in_workspace(workspace_id, WebhookSubscription.enabled).where(
            WebhookSubscription.id == row.subscription_id).scalar()
        if not enabled:
            raise Conflict("The event's subscription is disabled; enable it first (PATCH with enabled: true).")
        under_way = row.lease_until is not None and row.lease_until > now
        E.update(status="pending", give_up_at=now + timedelta(seconds=RETRY_WINDOW_S),
                 **({} if under_way else {"next_attempt_at": now, "lease_until": None})).where(E.id == event_id).execute()
    notify_enqueued()
    return get_event(workspace_id=workspace_id, event_id=event_id).event


# --- reading ----------------------------------------------------------------------------------

_E, _A = WebhookEvent, WebhookAttempt
_EVENT_COLUMNS = (_E.id, _E.workspace, _E.subscription, _E.event_type, _E.call, _E.status, _E.attempts,
                  _E.next_attempt_at, _E.give_up_at, _E.last_error, _E.created_at, _E.delivered_at)
_ATTEMPT_COLUMNS = (_A.id, _A.event, _A.subscription, _A.attempt, _A.started_at, _A.succeeded, _A.status_code,
                    _A.latency_ms, _A.error, _A.response_body)
_FILTER_COLUMNS = {"subscription_id": _E.subscription, "status": _E.status, "call_id": _E.call}


@functools.cache
def _events_page(names: tuple[str, ...]) -> PageQuery:
    """The events list for one set of filters, compiled once (newest first)."""
    return workspace_list(_E, _EVENT_COLUMNS, order_by=(_E.created_at.desc(), _E.id.desc()), names=names,
                          where=lambda params: [_FILTER_COLUMNS[name] == params[name] for name in names])


def list_events(*, workspace_id: str, limit: int, offset: int, subscription_id: str | None = None,
                status: str | None = None, call_id: str | None = None) -> Page[EventRecord]:
    values = {name: value for name, value in
              (("subscription_id", subscription_id), ("status", status), ("call_id", call_id)) if value is not None}
    return _events_page(tuple(values)).page(EventRecord, workspace_id=workspace_id, limit=limit, offset=offset,
                                            **values)


# An event's columns and its payload, as one read selects them.
_Detail = NamedTuple("_Detail", [*EventRecord.__annotations__.items(), ("payload", dict)])


_EVENT = Prepared(lambda workspace_id, event_id: _E.in_workspace(workspace_id, *_EVENT_COLUMNS, _E.payload)
                  .where(_E.id == event_id))


def get_event(*, workspace_id: str, event_id: str) -> EventDetail:
    row = _EVENT.first(_Detail, workspace_id=workspace_id, event_id=event_id)
    if row is None:
        raise NotFound(f"No webhook event {event_id} in this workspace.")
    return EventDetail(EventRecord(*row[:-1]), row.payload)


_SUBSCRIPTION_ATTEMPTS = PageQuery(
    lambda workspace_id, subscription_id, limit, offset: _A.in_workspace(workspace_id, *_ATTEMPT_COLUMNS)
    .where(_A.subscription == subscription_id).order_by(_A.id.desc()).limit(limit).offset(offset),
    lambda workspace_id, subscription_id: _A.in_workspace(workspace_id, fn.COUNT(_A.id))
    .where(_A.subscription == subscription_id))
_EVENT_ATTEMPTS = PageQuery(
    lambda workspace_id, event_id, limit, offset: _A.in_workspace(workspace_id, *_ATTEMPT_COLUMNS)
    .where(_A.event == event_id).order_by(_A.id.desc()).limit(limit).offset(offset),
    lambda workspace_id, event_id: _A.in_workspace(workspace_id, fn.COUNT(_A.id)).where(_A.event == event_id))


def subscription_attempts(*, workspace_id: str, subscription_id: str, limit: int, offset: int) -> Page[AttemptRecord]:
    """A subscription's delivery attempts, newest first (404 without the subscription)."""
    page = _SUBSCRIPTION_ATTEMPTS.page(AttemptRecord, workspace_id=workspace_id, subscription_id=subscription_id,
                                       limit=limit, offset=offset)
    if not page.total and not WebhookSubscription.in_workspace(workspace_id).where(
            WebhookSubscription.id == subscription_id).exists():
        raise NotFound(f"No webhook subscription {subscription_id} in this workspace.")
    return page


def event_attempts(*, workspace_id: str, event_id: str, limit: int, offset: int) -> Page[AttemptRecord]:
    """An event's delivery attempts, newest first (404 without the event)."""
    page = _EVENT_ATTEMPTS.page(AttemptRecord, workspace_id=workspace_id, event_id=event_id, limit=limit,
                                offset=offset)
    if not page.total and not _E.in_workspace(workspace_id).where(_E.id == event_id).exists():
        raise NotFound(f"No webhook event {event_id} in this workspace.")
    return page
