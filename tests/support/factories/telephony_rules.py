"""Telephony rules: the do-not-call list, business-hours schedules, and phone numbers with their
inbound routing (a row written as it is stored, for the routing tests: the phone numbers' own
API makes them through its own rules)."""
from __future__ import annotations

from datetime import datetime

from models.kernel.db import session
from tests.support.factories.identity import Actor, principal

WEEKDAYS_9_TO_5 = {day: [{"start": "09:00", "end": "17:00"}]
                   for day in ("monday", "tuesday", "wednesday", "thursday", "friday")}


def suppressed(actor: Actor, *numbers: str, reason: str | None = None, expires_at: datetime | None = None,
               source: str = "manual") -> list[str]:
    """``numbers`` on the actor's workspace's do-not-call list; their listings' ids."""
    from models.telephony import do_not_call
    with session():
        result = do_not_call.add(principal(actor), workspace_id=actor.workspace_id, source=source,
                                 numbers=[{"number": n, "reason": reason, "expiresAt": expires_at} for n in numbers])
    assert not result.failed, result.failed
    return [record.id for record in result.suppressions]


def schedule(actor: Actor, name: str = "Office hours", time_zone: str = "America/New_York",
             weekly_hours: dict | None = None, exceptions: list | None = None) -> str:
    """A schedule of the actor's workspace (weekdays 09:00-17:00 unless told); its id."""
    from models.telephony import schedules
    with session():
        return schedules.create(principal(actor), workspace_id=actor.workspace_id, name=name, time_zone=time_zone,
                                weekly_hours=WEEKDAYS_9_TO_5 if weekly_hours is None else weekly_hours,
                                exceptions=exceptions).id


def phone_number(actor: Actor, number: str, *, inbound: bool = True, outbound: bool = True,
                 target: tuple[str, str] | None = None, schedule_id: str | None = None,
                 after_hours: tuple[str, str] | None = None) -> str:
    """A phone number (E.164) of the actor's workspace answered by ``target`` ((agent|workflow, id)),
    outside ``schedule_id``'s hours by ``after_hours``; its id."""
    from models.telephony.tables import PhoneNumber
    with session():
        return PhoneNumber.create(
            workspace=actor.workspace_id, number=number, inbound=inbound, outbound=outbound,
            inbound_target_type=target[0] if target else None, inbound_target_id=target[1] if target else None,
            schedule=schedule_id, after_hours_target_type=after_hours[0] if after_hours else None,
            after_hours_target_id=after_hours[1] if after_hours else None, created_by=actor.user_id).id
