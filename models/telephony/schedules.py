"""Business-hours schedules: named weekly hours in an IANA time zone with dated exceptions
(models.telephony.hours checks and reads them), shared by campaigns (when they may call) and by
inbound routing (what answers a number outside its hours).

A name is unique in its workspace without regard to case (the unique index on its folded form
decides between concurrent requests). A schedule a campaign uses cannot be deleted (409); a phone
number that uses one loses it (the key is SET NULL), and with it its after-hours routing.
"""
from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from peewee import IntegrityError, fn

from models.identity.principal import Principal
from models.kernel.db import database, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.pagination import Page, PageQuery
from models.kernel.scoping import Workspace
from models.kernel.sql import Prepared
from models.kernel.text import text_problem
from models.telephony import hours
from models.telephony.tables import Schedule

NAME_MAX_CHARS = 100
MAX_PER_WORKSPACE = 1000

_S = Schedule


class ScheduleRecord(NamedTuple):
    id: str
    workspace_id: str
    name: str
    time_zone: str
    weekly_hours: dict
    exceptions: list
    created_by: str
    created_at: datetime
    updated_at: datetime


def open_at(schedule, at: datetime) -> bool:
    """Whether ``at`` (naive UTC as stored, or aware) falls within ``schedule``'s hours: any object
    with ``time_zone``, ``weekly_hours`` and ``exceptions`` as stored (a Schedule row, a
    ScheduleRecord)."""
    return hours.is_open(time_zone=schedule.time_zone, weekly_hours=schedule.weekly_hours,
                         exceptions=schedule.exceptions, at=at)


_COLUMNS = (_S.id, _S.workspace, _S.name, _S.time_zone, _S.weekly_hours, _S.exceptions, _S.created_by,
            _S.created_at, _S.updated_at)
_PAGE = PageQuery(
    lambda workspace_id, limit, offset: _S.in_workspace(workspace_id, *_COLUMNS)
    .order_by(_S.created_at, _S.id).limit(limit).offset(offset),
    lambda workspace_id: _S.in_workspace(workspace_id, fn.COUNT(_S.id)))
_ONE = Prepared(lambda workspace_id, schedule_id: _S.in_workspace(workspace_id, *_COLUMNS)
                .where(_S.id == schedule_id))


def _name(name) -> str:
    if not isinstance(name, str):
        raise InvalidInput(f"name must be text of 1 to {NAME_MAX_CHARS} characters.")
    name = name.strip()
    if not 1 <= len(name) <= NAME_MAX_CHARS:
        raise InvalidInput(f"name must be 1 to {NAME_MAX_CHARS} characters once trimmed; {len(name)} given.")
    problem = text_problem(name)
    if problem:
        raise InvalidInput(f"name {problem}.")
    return name


def _time_zone(name) -> str:
    hours.zone(name, "timeZone")
    return name


def _taken(name: str) -> Conflict:
    return Conflict(f"This workspace already has a schedule named {name!r} (names are compared without case).")


def create(principal: Principal, *, workspace_id: str, name: str, time_zone: str, weekly_hours: dict,
           exceptions: list | None = None) -> ScheduleRecord:
    name, time_zone = _name(name), _time_zone(time_zone)
    weekly_hours = hours.check_weekly_hours(weekly_hours)
    exceptions = hours.check_exceptions(exceptions or [])
    now = utcnow()
    try:
        with database.atomic():
            # The workspace's row, written first, orders concurrent creations: the cap holds.
            Workspace.update(id=Workspace.id).where(Workspace.id == workspace_id).execute()
            if _S.in_workspace(workspace_id).count() >= MAX_PER_WORKSPACE:
                raise Conflict(f"A workspace has at most {MAX_PER_WORKSPACE} schedules; delete one first.")
            row = _S.create(workspace=workspace_id, name=name, name_key=name.casefold(), time_zone=time_zone,
                            weekly_hours=weekly_hours, exceptions=exceptions, created_by=principal.user_id,
                            created_at=now, updated_at=now)
    except IntegrityError:
        raise _taken(name) from None
    return get(workspace_id=workspace_id, schedule_id=row.id)


def list_schedules(*, workspace_id: str, limit: int, offset: int) -> Page[ScheduleRecord]:
    """Oldest first."""
    return _PAGE.page(ScheduleRecord, workspace_id=workspace_id, limit=limit, offset=offset)


def get(*, workspace_id: str, schedule_id: str) -> ScheduleRecord:
    record = _ONE.first(ScheduleRecord, workspace_id=workspace_id, schedule_id=schedule_id)
    if record is None:
        raise NotFound(f"No schedule {schedule_id} in this workspace.")
    return record


def update(*, workspace_id: str, schedule_id: str, name: str | None = None, time_zone: str | None = None,
           weekly_hours: dict | None = None, exceptions: list | None = None) -> ScheduleRecord:
    """Replaces what is given (weeklyHours and exceptions each as a whole)."""
    changes: dict = {"updated_at": utcnow()}
    if name is not None:
        name = _name(name)
        changes.update(name=name, name_key=name.casefold())
    if time_zone is not None:
        changes["time_zone"] = _time_zone(time_zone)
    if weekly_hours is not None:
        changes["weekly_hours"] = hours.check_weekly_hours(weekly_hours)
    if exceptions is not None:
        changes["exceptions"] = hours.check_exceptions(exceptions)
    try:
        with database.atomic():
            if not _S.update(**changes).where((_S.workspace == workspace_id) & (_S.id == schedule_id)).execute():
                raise NotFound(f"No schedule {schedule_id} in this workspace.")
    except IntegrityError:
        raise _taken(name) from None
    return get(workspace_id=workspace_id, schedule_id=schedule_id)


def delete(*, workspace_id: str, schedule_id: str) -> None:
    """The phone numbers using it lose it (and their after-hours routing); a campaign using it
    keeps it from going: the campaign's key has no ON DELETE, so the database refuses, in a
    savepoint, whichever request made the campaign meanwhile."""
    try:
        with database.atomic():
            if not _S.delete().where((_S.workspace == workspace_id) & (_S.id == schedule_id)).execute():
                raise NotFound(f"No schedule {schedule_id} in this workspace.")
    except IntegrityError:
        raise Conflict(f"Schedule {schedule_id} is used by a campaign; give the campaign another schedule "
                       "or delete it first.") from None
