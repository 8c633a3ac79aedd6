"""Live calls: registered by their runtime as they start, moved from status to status while they
run, listed while they are not ended, and ended by their end-of-call-report.

A registration is idempotent on the runtime's callId (unique per workspace): the same fields again
answer the same call; other fields are a Conflict naming them. A status move is one UPDATE ...
WHERE status = <the status it moves from>: of two workers moving one call from the same status at
once, the second finds the row moved (PostgreSQL re-reads it once the first commits) and is
answered by what the call is now. Every move is kept, in order, with when it happened and why.
A call that ends fails its control requests still pending, in the same transaction.
"""
from __future__ import annotations

import contextlib
import functools
from datetime import datetime, timedelta
from typing import NamedTuple

from models.calls.calls import Report
from models.campaigns.tables import Campaign, CampaignContact
from models.kernel.db import database, is_postgres, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.pagination import Page, PageQuery, workspace_list
from models.kernel.sql import Prepared, Statement
from models.live_calls import lifecycle
from models.live_calls.lifecycle import ENDED, IN_PROGRESS, PENDING, QUEUED, RINGING
from models.live_calls.tables import LiveCall, LiveCallMove
from models.telephony import e164

DIRECTIONS = ("inbound", "outbound")
ENTITY_TYPES = ("agent", "workflow")
# How far ahead of this server's clock a move's `at` may be: the runtime's clock may run ahead a little.
CLOCK_SKEW_S = 60
# A call ended by its report, or by the runtime, fails the requests it never took.
CALL_ENDED = "The call ended before the request was delivered."


class LiveCallRecord(NamedTuple):
    id: str
    workspace_id: str
    call_id: str
    direction: str
    entity_type: str
    entity_id: str
    version_id: str
    from_number: str
    to_number: str
    campaign_id: str | None
    contact_id: str | None
    status: str
    status_reason: str | None
    status_at: datetime | None
    registered_at: datetime
    ringing_at: datetime | None
    answered_at: datetime | None
    ended_at: datetime | None
    updated_at: datetime
    recorded_call_id: str | None


class MoveRecord(NamedTuple):
    from_status: str
    to_status: str
    at: datetime
    reason: str | None
    recorded_at: datetime


class Registration(NamedTuple):
    """What a runtime says of a call as it starts; the fields a repeated registration must repeat."""
    direction: str
    entity_type: str
    entity_id: str
    version_id: str
    from_number: str
    to_number: str
    campaign_id: str | None
    contact_id: str | None


# The names the wire gives the registration's fields, for a Conflict's message.
_WIRE = {"direction": "direction", "entity_type": "entityType", "entity_id": "entityId", "version_id": "versionId",
         "from_number": "from", "to_number": "to", "campaign_id": "campaignId", "contact_id": "contactId"}

_L = LiveCall
_COLUMNS = tuple(getattr(_L, name if name != "workspace_id" else "workspace") for name in LiveCallRecord._fields)
_ONE = Prepared(lambda workspace_id, call_id: _L.in_workspace(workspace_id, *_COLUMNS).where(_L.call_id == call_id))
_ONE_LOCKED = Prepared(lambda workspace_id, call_id: _L.in_workspace(workspace_id, *_COLUMNS)
                       .where(_L.call_id == call_id).for_update())
_ONE_SHARED = Prepared(lambda workspace_id, call_id: _L.in_workspace(workspace_id, *_COLUMNS)
                       .where(_L.call_id == call_id).for_update("FOR SHARE"))


def find(workspace_id: str, call_id: str, *, lock: str | None = None) -> LiveCallRecord | None:
    """The workspace's live call of the runtime's ``call_id``, or None. ``lock`` (PostgreSQL):
    "update" or "share", held until the transaction ends."""
    if lock and is_postgres():
        query = _ONE_LOCKED if lock == "update" else _ONE_SHARED
    else:
        query = _ONE
    return query.first(LiveCallRecord, workspace_id=workspace_id, call_id=call_id)


def require(workspace_id: str, call_id: str, *, lock: str | None = None) -> LiveCallRecord:
    record = find(workspace_id, call_id, lock=lock)
    if record is None:
        raise NotFound(f"No live call {call_id} in this workspace.")
    return record


# --- registering ----------------------------------------------------------------------------

def check_registration(workspace_id: str, *, direction: str, entity_type: str, entity_id: str, version_id: str,
                       from_number: str, to_number: str, campaign_id: str | None = None,
                       contact_id: str | None = None) -> Registration:
    """The registration's fields as stored: numbers in E.164; InvalidInput naming the field unless
    the campaign (and the contact, one of that campaign's) are the workspace's. The version is
    checked as the call is registered (``register``)."""
    if direction not in DIRECTIONS:
        raise InvalidInput(f"direction must be one of {', '.join(DIRECTIONS)}.")
    if entity_type not in ENTITY_TYPES:
        raise InvalidInput(f"entityType must be one of {', '.join(ENTITY_TYPES)}.")
    numbers = e164.normalise(from_number, field="from"), e164.normalise(to_number, field="to")
    if contact_id is not None and campaign_id is None:
        raise InvalidInput("contactId needs campaignId: a contact is one of a campaign's.")
    if campaign_id is not None and not Campaign.in_workspace(workspace_id).where(Campaign.id == campaign_id).exists():
        raise InvalidInput(f"campaignId: no campaign {campaign_id} in this workspace.")
    if contact_id is not None and not CampaignContact.in_workspace(workspace_id).where(
            (CampaignContact.id == contact_id) & (CampaignContact.campaign == campaign_id)).exists():
        raise InvalidInput(f"contactId: no contact {contact_id} in campaign {campaign_id} of this workspace.")
    return Registration(direction, entity_type, entity_id, version_id, *numbers, campaign_id, contact_id)


# What a registration checks, in one round trip: the version is the workspace's, of the entity
# named; the callId is no call the workspace recorded already.
_CHECKS = Statement("""
    SELECT (SELECT 1 FROM entity_version WHERE workspace_id = {p} AND id = {p} AND entity_type = {p}
                                           AND entity_id = {p}),
           (SELECT 1 FROM call WHERE workspace_id = {p} AND id = {p})""")
_RETURNING = ", ".join(field.column_name for field in _COLUMNS)
# Of two registrations racing, the second waits for the first's commit, then inserts nothing.
_INSERT = Statement(f"""
    INSERT INTO live_call (id, workspace_id, call_id, direction, entity_type, entity_id, version_id, from_number,
                           to_number, campaign_id, contact_id, status, registered_at, updated_at)
    VALUES ({{p}}, {{p}}, {{p}}, {{p}}, {{p}}, {{p}}, {{p}}, {{p}}, {{p}}, {{p}}, {{p}}, {{p}}, {{p}}, {{p}})
    ON CONFLICT (workspace_id, call_id) DO NOTHING RETURNING {_RETURNING}""")
_stamp = LiveCall.registered_at.db_value
_CONVERTERS = tuple(field.python_value for field in _COLUMNS)


def _record(row) -> LiveCallRecord:
    """A row of the live call's columns as a statement's RETURNING gives them."""
    return LiveCallRecord(*(convert(value) for convert, value in zip(_CONVERTERS, row)))


def _atomic():
    """A savepoint, unless the caller's transaction (a request's unit of work) holds already: these
    functions write nothing before they may refuse, so a refusal leaves nothing to undo, and a
    savepoint would cost two round trips of each registration and move."""
    return contextlib.nullcontext() if database.in_transaction() else database.atomic()


def register(*, workspace_id: str, call_id: str, registration: Registration,
             now: datetime | None = None) -> tuple[LiveCallRecord, bool]:
    """The call registered as queued, or the one registered before under ``call_id`` with the same
    fields (False: nothing changed); Conflict naming the fields that differ, or when the callId is a
    call this workspace recorded already (its report came: it is over); InvalidInput naming
    versionId unless it is a version of the workspace's agent or workflow named. Two statements."""
    now = now or utcnow()
    with _atomic():
        version, recorded = _CHECKS.one(workspace_id, registration.version_id, registration.entity_type,
                                        registration.entity_id, workspace_id, call_id)
        if version is not None and recorded is None:
            row = _INSERT.execute(_new_id(), workspace_id, call_id, *registration, QUEUED, _stamp(now),
                                  _stamp(now)).fetchone()
            if row is not None:
                return _record(row), True
        existing = find(workspace_id, call_id)
    if existing is None:
        if version is None:
            raise InvalidInput(f"versionId: no version {registration.version_id} of {registration.entity_type} "
                               f"{registration.entity_id} in this workspace.")
        raise Conflict(f"callId {call_id} is a call this workspace recorded already: its end-of-call-report "
                       "came, so it cannot start again.")
    given = registration._asdict()
    differing = [_WIRE[name] for name, value in given.items() if getattr(existing, name) != value]
    if differing:
        raise Conflict(f"callId {call_id} was registered with other fields; these differ: {', '.join(differing)}.",
                       result={"callId": call_id, "differingFields": differing})
    return existing, False


def _new_id() -> str:
    return LiveCall.id.default()


# --- status moves ---------------------------------------------------------------------------

# The column each status stamps with its move's time: the first time only (a call answered again
# after a transfer keeps its first answer).
_STAMPS = {RINGING: "ringing_at", IN_PROGRESS: "answered_at", ENDED: "ended_at"}


@functools.cache
def _move_statement(status: str) -> Statement:
    stamp = _STAMPS.get(status)
    extra = f", {stamp} = COALESCE({stamp}, {{p}})" if stamp else ""
    return Statement(f"UPDATE live_call SET status = {{p}}, status_reason = {{p}}, status_at = {{p}}, "
                     f"updated_at = {{p}}{extra} WHERE id = {{p}} AND status = {{p}} RETURNING {_RETURNING}")


_INSERT_MOVE = Statement("""INSERT INTO live_call_move (id, workspace_id, live_call_id, from_status, to_status, at,
                                                        reason, recorded_at)
                            VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p}, {p})""")
_FAIL_PENDING = Statement(f"""UPDATE live_call_control SET state = 'failed', error = {{p}}, completed_at = {{p}},
                                                          updated_at = {{p}}
                              WHERE live_call_id = {{p}} AND state = '{PENDING}'""")


def move(*, workspace_id: str, call_id: str, status: str, at: datetime | None = None, reason: str | None = None,
         now: datetime | None = None) -> tuple[LiveCallRecord, bool]:
    """The call moved to ``status`` (False: it is in that status already, and nothing changed).
    Conflict naming the call's status and the moves it allows unless the move is in the table
    (models.live_calls.lifecycle); InvalidInput unless ``at`` (now by default) is at most
    CLOCK_SKEW_S ahead of now and not before the current status began."""
    if status not in lifecycle.STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(lifecycle.STATUSES)}.")
    now = now or utcnow()
    if at is not None and at > now + timedelta(seconds=CLOCK_SKEW_S):
        raise InvalidInput(f"at must not be more than {CLOCK_SKEW_S} s ahead of the server's clock "
                           f"({now.isoformat(timespec='seconds')}Z).")
    with _atomic():
        record = require(workspace_id, call_id)
        while True:
            if record.status == status:
                return record, False
            lifecycle.check_move(record.status, status)
            when = at or now
            if record.status_at is not None and when < record.status_at:
                raise InvalidInput(f"at must not be before the call became {record.status} "
                                   f"({record.status_at.isoformat(timespec='milliseconds')}Z).")
            stamp = (_stamp(when),) if status in _STAMPS else ()
            row = _move_statement(status).execute(status, reason, _stamp(when), _stamp(now), *stamp, record.id,
                                                  record.status).fetchone()
            if row is not None:
                break
            record = require(workspace_id, call_id)  # moved by another meanwhile: judged by what it is now
        _record_move(record, status, when, reason, now)
    return _record(row), True


def _record_move(record: LiveCallRecord, status: str, when: datetime, reason: str | None, now: datetime) -> None:
    _INSERT_MOVE.execute(_new_id(), record.workspace_id, record.id, record.status, status, _stamp(when), reason,
                         _stamp(now))
    if status == ENDED:
        _FAIL_PENDING.execute(CALL_ENDED, _stamp(now), _stamp(now), record.id)


def end_from_report(report: Report, now: datetime | None = None) -> list[str]:
    """The registered call a new end-of-call-report describes, ended at the report's endedAt and
    linked to the recorded call (in the ingest's transaction: models.call_recorded). The runtime's
    callId is the report's own, which the recorded call's id may not be (models.calls.calls). A
    report of a call never registered changes nothing here."""
    runtime_id = report.raw.get("callId", report.call_id)
    if not isinstance(runtime_id, str):
        return []
    now = now or utcnow()
    record = find(report.workspace_id, runtime_id, lock="update")
    if record is None:
        return []
    if record.status == ENDED:
        _LINK.execute(report.call_id, _stamp(now), record.id)
        return []
    reason = f"end-of-call-report: {report.ended_reason}" if report.ended_reason else "end-of-call-report"
    # The report's endedAt, as it says: it is what the call is billed by, whatever the moves said.
    _END.execute(reason, _stamp(report.ended_at), _stamp(now), _stamp(report.ended_at), report.call_id, record.id)
    _record_move(record, ENDED, report.ended_at, reason, now)
    return []


_LINK = Statement("UPDATE live_call SET recorded_call_id = {p}, updated_at = {p} WHERE id = {p} "
                  "AND recorded_call_id IS NULL")
_END = Statement(f"""UPDATE live_call SET status = '{ENDED}', status_reason = {{p}}, status_at = {{p}}, updated_at = {{p}},
                                         ended_at = COALESCE(ended_at, {{p}}), recorded_call_id = {{p}}
                     WHERE id = {{p}}""")


# --- reading --------------------------------------------------------------------------------

_M = LiveCallMove
_MOVES = Prepared(lambda live_call_id: _M.select(_M.from_status, _M.to_status, _M.at, _M.reason, _M.recorded_at)
                  .where(_M.live_call == live_call_id).order_by(_M.recorded_at, _M.id))


def get_status(*, workspace_id: str, call_id: str) -> tuple[LiveCallRecord, list[MoveRecord]]:
    """The call and its moves, oldest first: two statements."""
    record = require(workspace_id, call_id)
    return record, _MOVES.records(MoveRecord, live_call_id=record.id)


_FILTERS = {"status": lambda value: _L.status == value,
            "agent_id": lambda value: (_L.entity_type == "agent") & (_L.entity_id == value)}


@functools.cache
def _live_page(names: tuple[str, ...]) -> PageQuery:
    """The list of calls not ended for one set of filters, newest first, compiled once."""
    return workspace_list(_L, _COLUMNS, order_by=(_L.registered_at.desc(), _L.id.desc()), names=names,
                          where=lambda params: [_L.status != ENDED, *(_FILTERS[name](params[name]) for name in names)])


def list_live(*, workspace_id: str, limit: int, offset: int, status: str | None = None,
              agent_id: str | None = None) -> Page[LiveCallRecord]:
    """The workspace's calls not ended, newest first: one statement (two past the end)."""
    if status is not None and status not in lifecycle.OPEN:
        raise InvalidInput(f"status must be one of {', '.join(lifecycle.OPEN)}: ended calls are not live.")
    values = {name: value for name, value in (("status", status), ("agent_id", agent_id)) if value is not None}
    return _live_page(tuple(values)).page(LiveCallRecord, workspace_id=workspace_id, limit=limit, offset=offset,
                                          **values)

