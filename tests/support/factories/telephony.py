"""Telephony: a workspace's phone numbers (with their inbound routing), its phone book, its
business-hours schedules and its do-not-call list, made through the domain as the API makes them."""
from __future__ import annotations

import itertools
from datetime import datetime

from models.kernel.db import session
from tests.support.factories.identity import Actor, principal

WEEKDAYS_9_TO_5 = {day: [{"start": "09:00", "end": "17:00"}]
                   for day in ("monday", "tuesday", "wednesday", "thursday", "friday")}

# Fresh numbers: San Francisco numbers outside the 555 exchange the tests write out, so that a
# number a factory chose never takes one a test names (a number belongs to one workspace across
# the service).
_fresh = itertools.count()


def _fresh_number() -> str:
    """A valid E.164 number no other call of this gives."""
    n = next(_fresh)
    return f"+1415{200 + n // 10_000 % 300:03d}{n % 10_000:04d}"


def phone_number(actor: Actor, number: str | None = None, *, label: str | None = None,
                 provider: str | None = None, inbound: bool = True, outbound: bool = True,
                 target: tuple[str, str] | None = None, schedule_id: str | None = None,
                 after_hours: tuple[str, str] | None = None) -> str:
    """A phone number (a fresh one unless given) of the actor's workspace, answered by ``target``
    ((agent|workflow, id)) and, outside ``schedule_id``'s hours, by ``after_hours``; its id."""
    from models.telephony import numbers
    with session():
        record = numbers.create(principal(actor), workspace_id=actor.workspace_id, number=number or _fresh_number(),
                                label_text=label, provider_name=provider, inbound=inbound, outbound=outbound)
        if target or schedule_id or after_hours:
            numbers.set_routing(workspace_id=actor.workspace_id, number_id=record.id,
                                routing=numbers.Routing(target, schedule_id, after_hours))
    return record.id


def phone_alias(actor: Actor, name: str, number: str) -> str:
    """``name`` for ``number`` in the actor's workspace's phone book; the entry's id."""
    from models.telephony import phone_book
    with session():
        return phone_book.create(principal(actor), workspace_id=actor.workspace_id, name=name, number=number).id


def schedule(actor: Actor, name: str = "Office hours", time_zone: str = "America/New_York",
             weekly_hours: dict | None = None, exceptions: list | None = None) -> str:
    """A schedule of the actor's workspace (weekdays 09:00-17:00 unless told); its id."""
    from models.telephony import schedules
    with session():
        return schedules.create(principal(actor), workspace_id=actor.workspace_id, name=name, time_zone=time_zone,
                                weekly_hours=WEEKDAYS_9_TO_5 if weekly_hours is None else weekly_hours,
                                exceptions=exceptions).id


def suppressed(actor: Actor, *numbers: str, reason: str | None = None, expires_at: datetime | None = None,
               source: str = "manual", now: datetime | None = None) -> list[str]:
    """``numbers`` on the actor's workspace's do-not-call list, listed at ``now`` (by default the
    present; an earlier one makes an entry whose ``expires_at`` has passed since); their listings' ids."""
    from models.telephony import do_not_call
    with session():
        result = do_not_call.add(principal(actor), workspace_id=actor.workspace_id, source=source, now=now,
                                 numbers=[{"number": n, "reason": reason, "expiresAt": expires_at} for n in numbers])
    assert not result.failed, result.failed
    return [record.id for record in result.suppressions]
