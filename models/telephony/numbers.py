"""The workspace's own phone numbers: E.164, label, provider, capabilities, and what answers a call
to each (inbound routing); their CSV import.

A number belongs to one workspace across the service: the unique index on ``number`` decides it,
so that two workspaces adding the same number at once get one row and one 409, on either
database. Which of the two a 409 means (already in this workspace, or another's) is read after
the failed insert, from the caller's own workspace only.

Routing names an agent or a workflow of the workspace (the target; none: nobody answers), and
optionally a business-hours schedule with the target that answers outside its hours. The targets
and the schedule are locked for share while the routing is written, so none is deleted under it,
and an agent or workflow a number routes to cannot be deleted (models.entity_users). A number
that cannot take calls (inbound off) may still be routed: the resolve refuses it, and turning
inbound on makes the routing live. Turning outbound off is allowed while a campaign calls from the
number: a campaign checks its number when it is created and when work is claimed.
"""
from __future__ import annotations

import functools
from datetime import datetime
from typing import NamedTuple

import phonenumbers
from peewee import IntegrityError

from models.configs.references import lock_for_share
from models.configs.tables import Agent, VersionedEntity, Workflow
from models.identity.principal import Principal
from models.kernel.db import database, is_postgres, utcnow
from models.kernel import csv_table
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.pagination import Page, workspace_list
from models.kernel.sql import Prepared, like, like_pattern
from models.kernel.text import printable, text_problem
from models.telephony import e164
from models.telephony.tables import PhoneNumber, Schedule

LABEL_MAX_CHARS = 100
PROVIDER_MAX_CHARS = 50
CAPABILITIES = ("inbound", "outbound")
# The CSV import: its columns, its rows' cap (the request's body limit applies besides), and the
# rows written per statement.
IMPORT_COLUMNS = ("number", "label", "provider", "inbound", "outbound")
IMPORT_MAX_ROWS = 10_000
_IMPORT_BATCH = 500
_TRUE, _FALSE = frozenset({"true", "yes", "1"}), frozenset({"false", "no", "0"})


class NumberRecord(NamedTuple):
    id: str
    workspace_id: str
    number: str
    label: str | None
    provider: str | None
    inbound: bool
    outbound: bool
    inbound_target_type: str | None
    inbound_target_id: str | None
    schedule_id: str | None
    after_hours_target_type: str | None
    after_hours_target_id: str | None
    created_by: str
    created_at: datetime
    updated_at: datetime


class Routing(NamedTuple):
    """What answers a number: ``target`` (kind, id) or None, and outside ``schedule_id``'s hours
    ``after_hours`` (kind, id) or None."""
    target: tuple[str, str] | None = None
    schedule_id: str | None = None
    after_hours: tuple[str, str] | None = None


class ImportFailure(NamedTuple):
    line: int
    number: str
    reason: str


class Imported(NamedTuple):
    line: int
    id: str
    number: str


class ImportResult(NamedTuple):
    imported: list[Imported]
    failed: list[ImportFailure]


_N = PhoneNumber
_COLUMNS = (_N.id, _N.workspace, _N.number, _N.label, _N.provider, _N.inbound, _N.outbound,
            _N.inbound_target_type, _N.inbound_target_id, _N.schedule, _N.after_hours_target_type,
            _N.after_hours_target_id, _N.created_by, _N.created_at, _N.updated_at)
_ONE = Prepared(lambda workspace_id, number_id: _N.in_workspace(workspace_id, *_COLUMNS).where(_N.id == number_id))


_FILTERS = {
    # q: the number's start (as written in E.164) or a part of the label, without case.
    "number_prefix": lambda params: like(_N.number, params["number_prefix"], fold=False) | like(_N.label,
                                                                                               params["label_part"]),
    "inbound": lambda params: _N.inbound == True,  # noqa: E712 (SQL, not Python)
    "outbound": lambda params: _N.outbound == True,  # noqa: E712
}


@functools.cache
def _page(names: tuple[str, ...]):
    return workspace_list(_N, _COLUMNS, order_by=(_N.created_at, _N.id), names=names,
                          where=lambda params: [_FILTERS[name](params) for name in names if name in _FILTERS])


def number_prefix(q: str) -> str:
    """What a search for ``q`` compares with the start of an E.164 number: ``q`` without the
    spaces, dashes, dots and parentheses people write numbers with (``q`` itself when that leaves
    nothing, so that a search for "(" is not a search for every number)."""
    return "".join(c for c in q if c not in " -.()\t") or q


# --- the rules of a field -----------------------------------------------------------------------

def _region(region: str | None) -> str | None:
    if region is None:
        return None
    if region.upper() not in phonenumbers.SUPPORTED_REGIONS:
        raise InvalidInput(f"region must be the ISO 3166 code of a region with a numbering plan, such as US or "
                           f"GB; {printable(region)!r} is not one.")
    return region.upper()


def _text(value: str | None, field: str, max_chars: int) -> str | None:
    """A one-line optional text: trimmed, blank is none."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be text.")
    if problem := text_problem(value):
        raise InvalidInput(f"{field} {problem}.")
    value = value.strip()
    if len(value) > max_chars:
        raise InvalidInput(f"{field} must be at most {max_chars} characters; {len(value)} given.")
    return value or None


def label(value: str | None) -> str | None:
    return _text(value, "label", LABEL_MAX_CHARS)


def provider(value: str | None) -> str | None:
    return _text(value, "provider", PROVIDER_MAX_CHARS)


def _target(agent_id: str | None, workflow_id: str | None, agent_field: str,
            workflow_field: str) -> tuple[str, str] | None:
    if agent_id is not None and workflow_id is not None:
        raise InvalidInput(f"{agent_field} and {workflow_field} name two targets; give one of them.")
    if agent_id is not None:
        return Agent.KIND, agent_id
    if workflow_id is not None:
        return Workflow.KIND, workflow_id
    return None


def _lock_targets(workspace_id: str, targets: dict[str, tuple[str, str] | None]) -> None:
    """Each target (by its field's name) an agent or workflow of the workspace, held until the
    transaction ends so that none is deleted before it commits; InvalidInput naming the field."""
    for field, target in targets.items():
        if target is None:
            continue
        kind, entity_id = target
        model: type[VersionedEntity] = Agent if kind == Agent.KIND else Workflow
        if entity_id not in lock_for_share(model, workspace_id, [entity_id]):
            raise InvalidInput(f"{field}: no {kind} {entity_id} in this workspace.")


def _lock_schedule(workspace_id: str, schedule_id: str | None) -> None:
    if schedule_id is None:
        return
    query = Schedule.in_workspace(workspace_id, Schedule.id).where(Schedule.id == schedule_id)
    if (query.for_update("FOR SHARE") if is_postgres() else query).first() is None:
        raise InvalidInput(f"scheduleId: no schedule {schedule_id} in this workspace.")


def _taken(workspace_id: str, number: str) -> Conflict:
    """The 409 of a number the unique index refused: whose it is, read from this workspace."""
    mine = _N.in_workspace(workspace_id, _N.id).where(_N.number == number).scalar()
    if mine is not None:
        return Conflict(f"The number {number} is in this workspace already ({mine}).")
    return Conflict(f"The number {number} belongs to another workspace; a number belongs to one workspace "
                    "across the service.")


# --- the operations -----------------------------------------------------------------------------

def create(principal: Principal, *, workspace_id: str, number: str, region: str | None = None,
           label_text: str | None = None, provider_name: str | None = None, inbound: bool = True,
           outbound: bool = True, inbound_agent_id: str | None = None,
           inbound_workflow_id: str | None = None) -> NumberRecord:
    """A new number of the workspace, answered by the agent or workflow given (or nobody yet)."""
    number = e164.normalise(number, field="number", region=_region(region))
    label_text, provider_name = label(label_text), provider(provider_name)
    target = _target(inbound_agent_id, inbound_workflow_id, "inboundAgentId", "inboundWorkflowId")
    now = utcnow()
    with database.atomic():
        _lock_targets(workspace_id, {"inboundAgentId" if target and target[0] == Agent.KIND
                                     else "inboundWorkflowId": target})
        try:
            with database.atomic():
                row = _N.create(workspace=workspace_id, number=number, label=label_text, provider=provider_name,
                                inbound=inbound, outbound=outbound, inbound_target_type=target and target[0],
                                inbound_target_id=target and target[1], created_by=principal.user_id,
                                created_at=now, updated_at=now)
        except IntegrityError:
            raise _taken(workspace_id, number) from None
    return get(workspace_id=workspace_id, number_id=row.id)


def list_numbers(*, workspace_id: str, limit: int, offset: int, q: str | None = None,
                 capability: str | None = None) -> Page[NumberRecord]:
    """The workspace's numbers, oldest first; ``q`` keeps those whose number starts with it or
    whose label holds it (without case), ``capability`` those that can take (inbound) or make
    (outbound) calls."""
    values: dict = {}
    if q is not None:
        values["number_prefix"] = like_pattern(number_prefix(q), prefix=True)
        values["label_part"] = like_pattern(q)
    if capability is not None:
        if capability not in CAPABILITIES:
            raise InvalidInput(f"capability must be one of {', '.join(CAPABILITIES)}.")
        values[capability] = True
    names = tuple(sorted(values))
    return _page(names).page(NumberRecord, workspace_id=workspace_id, limit=limit, offset=offset, **values)


def get(*, workspace_id: str, number_id: str) -> NumberRecord:
    record = _ONE.first(NumberRecord, workspace_id=workspace_id, number_id=number_id)
    if record is None:
        raise NotFound(f"No phone number {number_id} in this workspace.")
    return record


_UNSET = object()


def update(*, workspace_id: str, number_id: str, label_text=_UNSET, provider_name=_UNSET,
           inbound: bool | None = None, outbound: bool | None = None) -> NumberRecord:
    """The label, provider (None removes either) and capabilities; the number itself is fixed."""
    changes: dict = {"updated_at": utcnow()}
    if label_text is not _UNSET:
        changes["label"] = label(label_text)
    if provider_name is not _UNSET:
        changes["provider"] = provider(provider_name)
    if inbound is not None:
        changes["inbound"] = inbound
    if outbound is not None:
        changes["outbound"] = outbound
    with database.atomic():
        if not _N.update(**changes).where((_N.workspace == workspace_id) & (_N.id == number_id)).execute():
            raise NotFound(f"No phone number {number_id} in this workspace.")
    return get(workspace_id=workspace_id, number_id=number_id)


def delete(*, workspace_id: str, number_id: str) -> None:
    """The number; Conflict while a campaign calls from it (the campaign's reference refuses it)."""
    record = get(workspace_id=workspace_id, number_id=number_id)
    try:
        with database.atomic():
            if not _N.delete().where((_N.workspace == workspace_id) & (_N.id == number_id)).execute():
                raise NotFound(f"No phone number {number_id} in this workspace.")
    except IntegrityError:
        raise Conflict(f"A campaign calls from the number {record.number}; delete the campaign or give it another "
                       "caller number first.") from None


def set_routing(*, workspace_id: str, number_id: str, routing: Routing) -> NumberRecord:
    """What answers the number from now on, replacing what did: the target (None: nobody), and
    with a schedule, what answers outside its hours (None: nobody)."""
    if routing.after_hours is not None and routing.schedule_id is None:
        raise InvalidInput("afterHoursAgentId and afterHoursWorkflowId need a scheduleId: the after-hours "
                           "target answers outside the schedule's hours.")
    with database.atomic():
        query = _N.in_workspace(workspace_id, _N.id).where(_N.id == number_id)
        if (query.for_update() if is_postgres() else query).first() is None:
            raise NotFound(f"No phone number {number_id} in this workspace.")
        _lock_targets(workspace_id, {
            ("agentId" if routing.target and routing.target[0] == Agent.KIND else "workflowId"): routing.target,
            ("afterHoursAgentId" if routing.after_hours and routing.after_hours[0] == Agent.KIND
             else "afterHoursWorkflowId"): routing.after_hours})
        _lock_schedule(workspace_id, routing.schedule_id)
        target, after = routing.target or (None, None), routing.after_hours or (None, None)
        _N.update(inbound_target_type=target[0], inbound_target_id=target[1], schedule=routing.schedule_id,
                  after_hours_target_type=after[0], after_hours_target_id=after[1],
                  updated_at=utcnow()).where(_N.id == number_id).execute()
    return get(workspace_id=workspace_id, number_id=number_id)


def routing_of(agent_id: str | None, workflow_id: str | None, schedule_id: str | None,
               after_hours_agent_id: str | None, after_hours_workflow_id: str | None) -> Routing:
    """The routing a request's fields describe; InvalidInput when one names two targets."""
    return Routing(_target(agent_id, workflow_id, "agentId", "workflowId"), schedule_id,
                   _target(after_hours_agent_id, after_hours_workflow_id, "afterHoursAgentId",
                           "afterHoursWorkflowId"))


def answered_by(kind: str, workspace_id: str, entity_id: str) -> list[str]:
    """The numbers the agent or workflow answers, in or after hours (models.entity_users)."""
    rows = (_N.in_workspace(workspace_id, _N.id, _N.number)
            .where(((_N.inbound_target_type == kind) & (_N.inbound_target_id == entity_id))
                   | ((_N.after_hours_target_type == kind) & (_N.after_hours_target_id == entity_id)))
            .order_by(_N.number).tuples())
    return [f"the phone number {number} ({number_id})" for number_id, number in rows]


# --- the CSV import -----------------------------------------------------------------------------

def read_csv(body: bytes) -> list[tuple[int, dict[str, str], int]]:
    """The rows of a CSV body as (line, {column: cell}, cells past the header's columns)
    (models.kernel.csv_table reads the file); InvalidInput, besides, for an unknown or repeated
    column or no number column."""
    table = csv_table.read(body, max_rows=IMPORT_MAX_ROWS, columns_hint=",".join(IMPORT_COLUMNS))
    columns = [cell.lower() for cell in table.header]
    if unknown := [c for c in columns if c not in IMPORT_COLUMNS]:
        raise InvalidInput(f"The CSV header names unknown columns: {printable(', '.join(unknown), 80)}; the "
                           f"columns are {', '.join(IMPORT_COLUMNS)}.")
    if len(set(columns)) != len(columns):
        raise InvalidInput("The CSV header names a column twice.")
    if "number" not in columns:
        raise InvalidInput(f"The CSV header has no number column; the columns are {', '.join(IMPORT_COLUMNS)} "
                           "(number required, the others optional).")
    return [(line, dict(zip(columns, cells)), max(0, len(cells) - len(columns))) for line, cells in table.rows]


def _boolean(cell: str, column: str, default: bool) -> bool:
    value = cell.strip().lower()
    if not value:
        return default
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise InvalidInput(f"{column} must be true, false, yes, no, 1 or 0, not {printable(cell.strip(), 20)!r}.")


def _row(cells: dict[str, str], extra: int, region: str | None) -> dict:
    """One row's columns as stored; InvalidInput saying what is wrong with it."""
    if extra:
        raise InvalidInput(f"the row has {extra} cell(s) more than the header has columns.")
    return {"number": e164.normalise(cells.get("number", "").strip(), field="number", region=region),
            "label": label(cells.get("label")), "provider": provider(cells.get("provider")),
            "inbound": _boolean(cells.get("inbound", ""), "inbound", True),
            "outbound": _boolean(cells.get("outbound", ""), "outbound", True)}


def import_csv(principal: Principal, *, workspace_id: str, body: bytes, region: str | None = None) -> ImportResult:
    """Each good row of the CSV a new number of the workspace (with no routing); each bad one
    reported by its line and why: unreadable, a repeat of an earlier line, in this workspace
    already, another workspace's. Each row stands alone: a bad one keeps no other out."""
    region = _region(region)
    failed: list[ImportFailure] = []
    good: list[tuple[int, dict]] = []
    first_line: dict[str, int] = {}
    for line, cells, extra in read_csv(body):
        shown = printable(cells.get("number", "").strip(), 40)
        try:
            row = _row(cells, extra, region)
        except InvalidInput as exc:
            failed.append(ImportFailure(line, shown, exc.message))
            continue
        if row["number"] in first_line:
            failed.append(ImportFailure(line, shown, f"{row['number']} is on line {first_line[row['number']]} "
                                                     "already."))
            continue
        first_line[row["number"]] = line
        good.append((line, row))
    imported: list[Imported] = []
    now = utcnow()
    for start in range(0, len(good), _IMPORT_BATCH):
        batch = good[start:start + _IMPORT_BATCH]
        rows = [{**row, "id": PhoneNumber.id.default(), "workspace": workspace_id, "created_by": principal.user_id,
                 "created_at": now, "updated_at": now} for _, row in batch]
        numbers = [row["number"] for row in rows]
        with database.atomic():
            # A number another request holds (this workspace's or another's) is skipped, not an error:
            # the unique index decides, whatever runs at the same time.
            _N.insert_many(rows).on_conflict_ignore().execute()
            present = dict(_N.in_workspace(workspace_id, _N.number, _N.id).where(_N.number.in_(numbers)).tuples())
        for (line, _), row in zip(batch, rows):
            number = row["number"]
            if present.get(number) == row["id"]:
                imported.append(Imported(line, row["id"], number))
            elif number in present:
                failed.append(ImportFailure(line, number, f"{number} is in this workspace already "
                                                          f"({present[number]})."))
            else:
                failed.append(ImportFailure(line, number, f"{number} belongs to another workspace."))
    failed.sort(key=lambda failure: failure.line)
    return ImportResult(imported, failed)
