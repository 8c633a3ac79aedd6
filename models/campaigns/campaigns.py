"""Campaigns: create, list, get, rename, delete, and their status moves (models.campaigns.lifecycle).

A campaign calls its contacts with one agent or workflow, from one of the workspace's
outbound-capable numbers, within a schedule (models.telephony: its own time zone) or within calling
hours read in each contact's time zone (default: Monday to Friday, 09:00 to 20:00), between
``startsAt`` and ``endsAt`` when they are set.

The agent or workflow is locked for share while the campaign is made, so that it is not deleted
meanwhile; afterwards ``users_of`` (listed in models.entity_users) keeps it from being deleted
while a campaign that is not over (draft, scheduled, running or paused) calls with it.
"""
from __future__ import annotations

import functools
from datetime import datetime, timezone
from typing import NamedTuple

from peewee import JOIN, SQL, fn

from models.campaigns import lifecycle
from models.campaigns.tables import Campaign, CampaignAttempt, CampaignContact
from models.configs.references import lock_for_share
from models.configs.tables import Agent, Workflow
from models.identity.principal import Principal
from models.kernel.db import database, is_postgres, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.pagination import Page, PageQuery
from models.kernel.scoping import same_workspace
from models.kernel.sql import Prepared, like, like_pattern, with_parameters
from models.telephony.hours import DAYS, check_windows
from models.telephony.tables import PhoneNumber, Schedule

NAME_MAX_CHARS = 100
MAX_CONCURRENT_CALLS = 100
MAX_ATTEMPTS = 10
RETRY_DELAY_S = (60, 604_800)
DEFAULTS = {"max_concurrent_calls": 1, "max_attempts": 3, "retry_delay_s": 3600}
# When neither a schedule nor hours are given: weekdays, 09:00 to 20:00 in each contact's zone.
DEFAULT_CALLING_HOURS = {"days": list(DAYS[:5]), "start": "09:00", "end": "20:00"}
TARGETS = {"agent": Agent, "workflow": Workflow}


class CampaignRecord(NamedTuple):
    id: str
    workspace_id: str
    name: str
    status: str
    target_type: str
    target_id: str
    caller_number_id: str
    caller_number: str | None
    schedule_id: str | None
    calling_hours: dict | None
    starts_at: datetime | None
    ends_at: datetime | None
    max_concurrent_calls: int
    max_attempts: int
    retry_delay_s: int
    created_by: str
    created_at: datetime
    updated_at: datetime
    completed_at: datetime | None
    contact_count: int


class Renamed(NamedTuple):
    id: str
    name: str
    updated_at: datetime


_C = Campaign
_K = CampaignContact


def _columns(workspace_id):
    # The contacts counted by a subquery of the same statement: a page costs one statement.
    count = _K.in_workspace(workspace_id, fn.COUNT(SQL("1"))).where(_K.campaign == _C.id)
    return (_C.id, _C.workspace, _C.name, _C.status, _C.target_type, _C.target_id, _C.caller_number,
            PhoneNumber.number, _C.schedule, _C.calling_hours, _C.starts_at, _C.ends_at, _C.max_concurrent_calls,
            _C.max_attempts, _C.retry_delay_s, _C.created_by, _C.created_at, _C.updated_at, _C.completed_at,
            count.alias("contact_count"))


def _selected(workspace_id):
    return (_C.in_workspace(workspace_id, *_columns(workspace_id))
            .join_from(_C, PhoneNumber, JOIN.LEFT_OUTER,
                       on=same_workspace(PhoneNumber.id == _C.caller_number, PhoneNumber, _C)))


_ONE = Prepared(lambda workspace_id, campaign_id: _selected(workspace_id).where(_C.id == campaign_id))


@functools.cache
def _page(statuses: tuple[str, ...], search: bool) -> PageQuery:
    """The list for one set of filters, compiled once (statuses, from a closed list, are constants
    of the statement), newest first."""
    names = ("q",) if search else ()

    def conditions(params):
        found = [_C.status.in_(statuses)] if statuses else []
        if search:
            found.append(like(_C.name, params["q"]))
        return found

    def rows(workspace_id, limit, offset, **params):
        query = _selected(workspace_id)
        if where := conditions(params):
            query = query.where(*where)
        return query.order_by(_C.created_at.desc(), _C.id.desc()).limit(limit).offset(offset)

    def total(workspace_id, **params):
        query = _C.in_workspace(workspace_id, fn.COUNT(_C.id))
        return query.where(*where) if (where := conditions(params)) else query

    return PageQuery(with_parameters(rows, ("workspace_id", "limit", "offset", *names)),
                     with_parameters(total, ("workspace_id", *names)))


def check_name(name: str) -> str:
    """The name trimmed of surrounding white space (inner spaces kept); 1 to 100 characters."""
    if not isinstance(name, str):
        raise InvalidInput("name must be a string of 1 to 100 characters.")
    trimmed = name.strip()
    if not trimmed:
        raise InvalidInput("name must hold something besides spaces: 1 to 100 characters.")
    if len(trimmed) > NAME_MAX_CHARS:
        raise InvalidInput(f"name must be 1 to {NAME_MAX_CHARS} characters; {len(trimmed)} given.")
    return trimmed


def _bounded(value, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(f"{field} must be an integer from {low} to {high}.")
    return value


def check_calling_hours(hours) -> dict:
    """``{days, start, end}``: days named once each (1 to 7 of monday..sunday), start before end."""
    if not isinstance(hours, dict) or set(hours) != {"days", "start", "end"}:
        raise InvalidInput('callingHours must be {"days": [...], "start": "HH:MM", "end": "HH:MM"}.')
    days = hours["days"]
    if not isinstance(days, list) or not 1 <= len(days) <= 7 or len(set(days)) != len(days) \
            or any(day not in DAYS for day in days):
        raise InvalidInput(f"callingHours.days must name 1 to 7 different days of {', '.join(DAYS)}.")
    window = check_windows([{"start": hours["start"], "end": hours["end"]}], "callingHours")[0]
    return {"days": [day for day in DAYS if day in days], **window}


def _instant(value, field: str) -> datetime | None:
    """An ISO 8601 instant with its offset, as naive UTC (the stored form)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise InvalidInput(f"{field} must be an ISO 8601 date and time, such as 2026-12-01T09:00:00Z.") from None
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise InvalidInput(f"{field} must carry its offset from UTC (Z or +01:00, say).")
    try:
        return value.astimezone(timezone.utc).replace(tzinfo=None)
    except OverflowError:
        raise InvalidInput(f"{field} must fall within the years 1 to 9999 in UTC.") from None


def _target(workspace_id: str, agent_id: str | None, workflow_id: str | None) -> tuple[str, str]:
    if (agent_id is None) == (workflow_id is None):
        raise InvalidInput("A campaign calls with one agent or one workflow: give agentId or workflowId, "
                           "not both and not neither.")
    kind, entity_id = ("agent", agent_id) if agent_id is not None else ("workflow", workflow_id)
    # Held until the campaign is committed, so that it is not deleted meanwhile.
    if entity_id not in lock_for_share(TARGETS[kind], workspace_id, [entity_id]):
        raise InvalidInput(f"{kind}Id: no {kind} {entity_id} in this workspace.")
    return kind, entity_id


def _caller_number(workspace_id: str, number_id: str) -> None:
    query = PhoneNumber.in_workspace(workspace_id, PhoneNumber.number, PhoneNumber.outbound).where(
        PhoneNumber.id == number_id)
    row = (query.for_update("FOR SHARE") if is_postgres() else query).tuples().first()
    if row is None:
        raise InvalidInput(f"callerNumberId: no phone number {number_id} in this workspace.")
    if not row[1]:
        raise Conflict(f"callerNumberId: the phone number {row[0]} ({number_id}) cannot place calls "
                       "(its outbound capability is off); turn it on or choose another number.")


def _schedule(workspace_id: str, schedule_id: str) -> None:
    query = Schedule.in_workspace(workspace_id, Schedule.id).where(Schedule.id == schedule_id)
    if (query.for_update("FOR SHARE") if is_postgres() else query).first() is None:
        raise InvalidInput(f"scheduleId: no schedule {schedule_id} in this workspace.")


def create(principal: Principal, *, workspace_id: str, name: str, caller_number_id: str,
           agent_id: str | None = None, workflow_id: str | None = None, schedule_id: str | None = None,
           calling_hours: dict | None = None, starts_at=None, ends_at=None,
           max_concurrent_calls: int = DEFAULTS["max_concurrent_calls"],
           max_attempts: int = DEFAULTS["max_attempts"], retry_delay_s: int = DEFAULTS["retry_delay_s"],
           now: datetime | None = None) -> CampaignRecord:
    """A new campaign, in draft."""
    now = now or utcnow()
    name = check_name(name)
    if schedule_id is not None and calling_hours is not None:
        raise InvalidInput("Give scheduleId or callingHours, not both: a campaign calls within one of them.")
    hours = None if schedule_id is not None else (
        check_calling_hours(calling_hours) if calling_hours is not None else dict(DEFAULT_CALLING_HOURS))
    starts, ends = _instant(starts_at, "startsAt"), _instant(ends_at, "endsAt")
    if ends is not None and starts is not None and ends <= starts:
        raise InvalidInput("endsAt must come after startsAt.")
    if ends is not None and ends <= now:
        raise InvalidInput("endsAt must be in the future.")
    _bounded(max_concurrent_calls, "maxConcurrentCalls", 1, MAX_CONCURRENT_CALLS)
    _bounded(max_attempts, "maxAttempts", 1, MAX_ATTEMPTS)
    _bounded(retry_delay_s, "retryDelaySeconds", *RETRY_DELAY_S)
    with database.atomic():
        kind, entity_id = _target(workspace_id, agent_id, workflow_id)
        _caller_number(workspace_id, caller_number_id)
        if schedule_id is not None:
            _schedule(workspace_id, schedule_id)
        row = Campaign.create(
            workspace=workspace_id, name=name, status=lifecycle.DRAFT, target_type=kind, target_id=entity_id,
            caller_number=caller_number_id, schedule=schedule_id, calling_hours=hours, starts_at=starts,
            ends_at=ends, max_concurrent_calls=max_concurrent_calls, max_attempts=max_attempts,
            retry_delay_s=retry_delay_s, created_by=principal.user_id, created_at=now, updated_at=now)
    return get(workspace_id=workspace_id, campaign_id=row.id)


def list_campaigns(*, workspace_id: str, limit: int, offset: int, statuses: list[str] | None = None,
                   q: str | None = None) -> Page[CampaignRecord]:
    """Newest first; ``statuses`` any of lifecycle.STATUSES, ``q`` a part of the name, in any case."""
    unknown = [s for s in statuses or () if s not in lifecycle.STATUSES]
    if unknown:
        raise InvalidInput(f"status must be one or more of {', '.join(lifecycle.STATUSES)}, comma-separated.")
    chosen = tuple(s for s in lifecycle.STATUSES if s in (statuses or ()))
    params = {"q": like_pattern(q)} if q else {}
    return _page(chosen, bool(q)).page(CampaignRecord, workspace_id=workspace_id, limit=limit, offset=offset,
                                       **params)


def get(*, workspace_id: str, campaign_id: str) -> CampaignRecord:
    record = _ONE.first(CampaignRecord, workspace_id=workspace_id, campaign_id=campaign_id)
    if record is None:
        raise NotFound(f"No campaign {campaign_id} in this workspace.")
    return record


def lock(workspace_id: str, campaign_id: str):
    """The campaign's (status, starts_at, ends_at, target_type, target_id), its row locked until the
    transaction ends; NotFound when the workspace has none such."""
    query = _C.in_workspace(workspace_id, _C.status, _C.starts_at, _C.ends_at, _C.target_type, _C.target_id,
                            _C.name).where(_C.id == campaign_id)
    row = (query.for_update() if is_postgres() else query).tuples().first()
    if row is None:
        raise NotFound(f"No campaign {campaign_id} in this workspace.")
    return row


def rename(*, workspace_id: str, campaign_id: str, name: str) -> Renamed:
    """The one change a campaign takes after it is made: its name (trimmed, 1 to 100 characters)."""
    name = check_name(name)
    now = utcnow()
    with database.atomic():
        if not _C.update(name=name, updated_at=now).where(
                (_C.workspace == workspace_id) & (_C.id == campaign_id)).execute():
            raise NotFound(f"No campaign {campaign_id} in this workspace.")
    return Renamed(campaign_id, name, now)


def delete(*, workspace_id: str, campaign_id: str) -> None:
    """The campaign with its contacts and attempts; not while it is running."""
    with database.atomic():
        status = lock(workspace_id, campaign_id)[0]
        if status == lifecycle.RUNNING:
            raise Conflict("The campaign is running; pause or cancel it before deleting it.")
        CampaignAttempt.delete().where((CampaignAttempt.workspace == workspace_id)
                                       & (CampaignAttempt.campaign == campaign_id)).execute()
        _K.delete().where((_K.workspace == workspace_id) & (_K.campaign == campaign_id)).execute()
        _C.delete().where((_C.workspace == workspace_id) & (_C.id == campaign_id)).execute()


def move(*, workspace_id: str, campaign_id: str, status: str, now: datetime | None = None) -> CampaignRecord:
    """The campaign in ``status`` when the move is legal (lifecycle.MOVES), else Conflict naming the
    current status and the moves it allows. Starting (scheduled, running) needs a contact and a
    published version of the agent or workflow, and an endsAt still ahead; scheduling needs a
    startsAt."""
    if status not in lifecycle.STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(lifecycle.STATUSES)}.")
    now = now or utcnow()
    with database.atomic():
        current, starts_at, ends_at, target_type, target_id, _ = lock(workspace_id, campaign_id)
        lifecycle.check_move(current, status)
        if status in lifecycle.STARTING:
            _check_startable(workspace_id, campaign_id, status, starts_at, ends_at, target_type, target_id, now)
        changes = {"status": status, "updated_at": now}
        if status == lifecycle.COMPLETED:
            changes["completed_at"] = now
        _C.update(**changes).where((_C.workspace == workspace_id) & (_C.id == campaign_id)).execute()
    return get(workspace_id=workspace_id, campaign_id=campaign_id)


def _check_startable(workspace_id, campaign_id, status, starts_at, ends_at, target_type, target_id, now) -> None:
    if status == lifecycle.SCHEDULED and starts_at is None:
        raise Conflict("The campaign has no startsAt to be scheduled for; start it now (running) instead.")
    if ends_at is not None and ends_at <= now:
        raise Conflict("The campaign's endsAt has passed; it cannot start.")
    if _K.in_workspace(workspace_id, _K.id).where(_K.campaign == campaign_id).first() is None:
        raise Conflict("The campaign has no contacts; add at least one before starting it.")
    model = TARGETS[target_type]
    query = model.in_workspace(workspace_id, model.published_version_id).where(model.id == target_id)
    row = (query.for_update("FOR SHARE") if is_postgres() else query).tuples().first()
    if row is None or row[0] is None:
        raise Conflict(f"The campaign's {target_type} {target_id} has no published version; publish one "
                       "before starting the campaign.")


def users_of(kind: str, workspace_id: str, entity_id: str) -> list[str]:
    """The campaigns that still call (or will) with the agent or workflow: draft, scheduled, running
    or paused; a completed or cancelled one is history and keeps nothing (models.entity_users)."""
    rows = (_C.in_workspace(workspace_id, _C.id, _C.name)
            .where((_C.target_type == kind) & (_C.target_id == entity_id) & _C.status.in_(sorted(lifecycle.ACTIVE)))
            .order_by(_C.created_at).limit(11).tuples())
    return [f"the campaign {name!r} ({campaign_id})" for campaign_id, name in rows]
