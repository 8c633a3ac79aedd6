"""Inbound routing: which agent or workflow answers a call to one of the workspace's numbers at a
given moment, with the live (published) version's id and configuration, so that the runtime
needs one request to start answering.

Two statements whatever the case: the number with its schedule, then the target with its
published version. The number's schedule decides whether its inbound target or its after-hours
target answers; a number without a schedule is always within hours.
"""
from __future__ import annotations

import functools
from datetime import datetime
from typing import NamedTuple

from peewee import JOIN

from models.configs.entities import kind
from models.configs.tables import Version
from models.kernel.db import utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.scoping import same_workspace
from models.kernel.sql import Prepared
from models.telephony import e164, hours
from models.telephony.tables import PhoneNumber, Schedule


class Target(NamedTuple):
    type: str  # agent or workflow
    id: str
    name: str
    version_id: str
    version_number: int
    config: dict


class Resolution(NamedTuple):
    number: str
    phone_number_id: str
    within_hours: bool | None  # None: the number has no schedule
    schedule_id: str | None
    target: Target


class _Number(NamedTuple):
    id: str
    inbound: bool
    inbound_target_type: str | None
    inbound_target_id: str | None
    after_hours_target_type: str | None
    after_hours_target_id: str | None
    schedule_id: str | None
    schedule_name: str | None
    time_zone: str | None
    weekly_hours: dict | None
    exceptions: list | None


_P, _SCH = PhoneNumber, Schedule
_NUMBER = Prepared(lambda workspace_id, number: _P.in_workspace(
    workspace_id, _P.id, _P.inbound, _P.inbound_target_type, _P.inbound_target_id, _P.after_hours_target_type,
    _P.after_hours_target_id, _SCH.id, _SCH.name, _SCH.time_zone, _SCH.weekly_hours, _SCH.exceptions)
    .join_from(_P, _SCH, JOIN.LEFT_OUTER, on=same_workspace(_SCH.id == _P.schedule, _SCH, _P))
    .where(_P.number == number))


class _Live(NamedTuple):
    id: str
    name: str
    version_id: str | None
    version_number: int | None
    config: dict | None


@functools.cache
def _live(entity_type: str) -> Prepared:
    """An agent's or workflow's name and its published version, compiled once per kind."""
    model = kind(entity_type)
    live = Version.alias()
    return Prepared(lambda workspace_id, entity_id: model.in_workspace(
        workspace_id, model.id, model.name, live.id, live.version_number, live.config)
        .join_from(model, live, JOIN.LEFT_OUTER, on=same_workspace(live.id == model.published_version_id, live, model))
        .where(model.id == entity_id))


def resolve(*, workspace_id: str, number: str, at: datetime | None = None) -> Resolution:
    """What answers a call to ``number`` at ``at`` (default now). NotFound when the workspace has
    no such number; Conflict, naming why, when nothing can answer it."""
    number = e164.normalise(number, field="number")
    at = at or utcnow()
    row = _NUMBER.first(_Number, workspace_id=workspace_id, number=number)
    if row is None:
        raise NotFound(f"This workspace has no phone number {number}.")
    if not row.inbound:
        raise Conflict(f"{number} does not take inbound calls: turn on its inbound capability first.")
    if row.inbound_target_id is None:
        raise Conflict(f"No agent or workflow answers {number}: set its inbound target first.")
    within = None
    target_type, target_id = row.inbound_target_type, row.inbound_target_id
    if row.schedule_id is not None:
        try:
            within = hours.is_open(time_zone=row.time_zone, weekly_hours=row.weekly_hours,
                                   exceptions=row.exceptions, at=at)
        except OverflowError:  # the first or last hours of the calendar, in the schedule's zone
            raise InvalidInput("at must fall within the years 1 to 9999 in the schedule's time zone.") from None
        if not within:
            if row.after_hours_target_id is None:
                raise Conflict(f"{number} is closed at {hours.local(at, row.time_zone).isoformat(timespec='minutes')} "
                               f"(outside the hours of schedule {row.schedule_name!r}) and has no after-hours "
                               "target: set one to answer after hours.")
            target_type, target_id = row.after_hours_target_type, row.after_hours_target_id
    live = _live(target_type).first(_Live, workspace_id=workspace_id, entity_id=target_id)
    if live is None:
        raise Conflict(f"The {target_type} {target_id} set to answer {number} no longer exists: set another.")
    if live.version_id is None:
        raise Conflict(f"The {target_type} {live.name!r} that answers {number} has no published version: "
                       "publish a version first.")
    return Resolution(number, row.id, within, row.schedule_id,
                      Target(target_type, live.id, live.name, live.version_id, live.version_number, live.config))
