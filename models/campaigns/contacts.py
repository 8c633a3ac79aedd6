"""A campaign's contacts: added by list or by CSV, listed, read, removed.

A contact is a number in E.164 (models.telephony.e164), an optional name, the IANA time zone its
calling hours are read in (given, else the number's region's, else the workspace's time zone
setting), and variables for the agent's prompt. One number appears once per campaign: a number
already there, or repeated in one request, is merged into the contact (the later entry's name,
time zone and variables replace the contact's own where it gives them), as long as the contact is
still pending; a contact already called or being called is left as it is, and counted as merged.

A number on the workspace's do-not-call list (not expired) is added all the same, in the state
``suppressed``: kept, shown, never dialled. The list is read in one statement for all the numbers
of a request, as are the contacts already in the campaign.

Each request reports ``added`` (new, pending), ``merged``, ``suppressed`` (new, marked) and the
entries that ``failed``, with their index (a list) or line (a CSV) and the reason; the good entries
are added whatever the bad ones.
"""
from __future__ import annotations

import functools
from datetime import datetime, timedelta
from typing import NamedTuple

from peewee import JOIN, IntegrityError, fn

from models.campaigns import lifecycle
from models.campaigns.campaigns import lock
from models.campaigns.tables import Campaign, CampaignAttempt, CampaignContact
from models.kernel import csv_table
from models.kernel.db import database, is_postgres, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.pagination import Page, PageQuery
from models.kernel.scoping import Workspace, same_workspace
from models.kernel.sql import Prepared, like, like_pattern, with_parameters
from models.kernel.text import text_problem
from models.telephony import do_not_call, e164
from models.telephony.hours import zone
from models.telephony.tables import PhoneAlias

PENDING, IN_PROGRESS, DONE, FAILED, SUPPRESSED = "pending", "in_progress", "done", "failed", "suppressed"
STATES = (PENDING, IN_PROGRESS, DONE, FAILED, SUPPRESSED)

MAX_PER_REQUEST = 1000
MAX_CSV_ROWS = 10_000
NAME_MAX_CHARS = 200
MAX_VARIABLES = 50
VARIABLE_NAME_MAX_CHARS = 64
VARIABLE_VALUE_MAX_CHARS = 1000
_INSERT_BATCH = 500  # rows per INSERT: SQLite binds at most 32766 values a statement


class ContactRecord(NamedTuple):
    id: str
    campaign_id: str
    number: str
    name: str | None
    alias: str | None
    time_zone: str
    variables: dict
    state: str
    attempts: int
    next_attempt_at: datetime
    last_outcome: str | None
    last_call_id: str | None
    created_at: datetime
    updated_at: datetime


class Failure(NamedTuple):
    position: int  # the entry's index in a list, or its line in a CSV (the header is line 1)
    number: str | None
    reason: str


class AddReport(NamedTuple):
    added: int
    merged: int
    suppressed: int
    failed: list[Failure]


class _Entry(NamedTuple):
    position: int
    number: str
    name: str | None
    time_zone: str | None
    variables: dict | None


_K = CampaignContact
_COLUMNS = (_K.id, _K.campaign, _K.number, _K.name, PhoneAlias.name, _K.time_zone, _K.variables, _K.state,
            _K.attempts, _K.next_attempt_at, _K.last_outcome, _K.last_call_id, _K.created_at, _K.updated_at)


def _selected(workspace_id, campaign_id):
    return (_K.in_workspace(workspace_id, *_COLUMNS).where(_K.campaign == campaign_id)
            .join_from(_K, PhoneAlias, JOIN.LEFT_OUTER,
                       on=same_workspace(PhoneAlias.number == _K.number, PhoneAlias, _K)))


_ONE = Prepared(lambda workspace_id, campaign_id, contact_id: _selected(workspace_id, campaign_id)
                .where(_K.id == contact_id))


@functools.cache
def _page(states: tuple[str, ...], search: bool) -> PageQuery:
    """The list for one set of filters, compiled once, in the order contacts were added."""
    names = ("number_prefix", "q") if search else ()

    def conditions(params):
        found = [_K.state.in_(states)] if states else []
        if search:
            found.append(like(_K.number, params["number_prefix"]) | like(_K.name, params["q"])
                         | like(PhoneAlias.name, params["q"]))
        return found

    def rows(workspace_id, campaign_id, limit, offset, **params):
        query = _selected(workspace_id, campaign_id)
        if where := conditions(params):
            query = query.where(*where)
        return query.order_by(_K.created_at, _K.id).limit(limit).offset(offset)

    def total(workspace_id, campaign_id, **params):
        query = (_K.in_workspace(workspace_id, fn.COUNT(_K.id)).where(_K.campaign == campaign_id)
                 .join_from(_K, PhoneAlias, JOIN.LEFT_OUTER,
                            on=same_workspace(PhoneAlias.number == _K.number, PhoneAlias, _K)))
        return query.where(*where) if (where := conditions(params)) else query

    return PageQuery(with_parameters(rows, ("workspace_id", "campaign_id", "limit", "offset", *names)),
                     with_parameters(total, ("workspace_id", "campaign_id", *names)))


_CAMPAIGN_EXISTS = Prepared(lambda workspace_id, campaign_id: Campaign.in_workspace(workspace_id, Campaign.id)
                            .where(Campaign.id == campaign_id))


def list_contacts(*, workspace_id: str, campaign_id: str, limit: int, offset: int,
                  states: list[str] | None = None, q: str | None = None) -> Page[ContactRecord]:
    """In the order they were added; ``states`` any of STATES, ``q`` the start of the number or a part
    of the name or phone-book alias, in any case. One statement a page (a second only for an empty
    page, to tell an unknown campaign from an empty list)."""
    unknown = [s for s in states or () if s not in STATES]
    if unknown:
        raise InvalidInput(f"state must be one or more of {', '.join(STATES)}, comma-separated.")
    chosen = tuple(s for s in STATES if s in (states or ()))
    params = {"number_prefix": like_pattern(q, prefix=True), "q": like_pattern(q)} if q else {}
    page = _page(chosen, bool(q)).page(ContactRecord, workspace_id=workspace_id, campaign_id=campaign_id,
                                       limit=limit, offset=offset, **params)
    if not page.items and _CAMPAIGN_EXISTS.scalar(workspace_id=workspace_id, campaign_id=campaign_id) is None:
        raise NotFound(f"No campaign {campaign_id} in this workspace.")
    return page


def get(*, workspace_id: str, campaign_id: str, contact_id: str) -> ContactRecord:
    record = _ONE.first(ContactRecord, workspace_id=workspace_id, campaign_id=campaign_id, contact_id=contact_id)
    if record is None:
        raise NotFound(f"No contact {contact_id} in campaign {campaign_id} of this workspace.")
    return record


def delete(*, workspace_id: str, campaign_id: str, contact_id: str) -> None:
    """The contact and its attempts; not while it is being called."""
    with database.atomic():
        query = _K.in_workspace(workspace_id, _K.state).where((_K.campaign == campaign_id) & (_K.id == contact_id))
        row = (query.for_update() if is_postgres() else query).tuples().first()
        if row is None:
            raise NotFound(f"No contact {contact_id} in campaign {campaign_id} of this workspace.")
        if row[0] == IN_PROGRESS:
            raise Conflict("The contact is being called (in_progress); wait for the call's outcome before "
                           "removing it.")
        CampaignAttempt.delete().where((CampaignAttempt.workspace == workspace_id)
                                       & (CampaignAttempt.contact == contact_id)).execute()
        _K.delete().where((_K.workspace == workspace_id) & (_K.id == contact_id)).execute()


# --- adding --------------------------------------------------------------------------------------

def _variables(value, where: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput(f"{where}.variables must be an object of names to strings, numbers or booleans.")
    if len(value) > MAX_VARIABLES:
        raise InvalidInput(f"{where}.variables holds {len(value)} names; at most {MAX_VARIABLES}.")
    for key, item in value.items():
        if not isinstance(key, str) or not key or len(key) > VARIABLE_NAME_MAX_CHARS or text_problem(key):
            raise InvalidInput(f"{where}.variables: a name must be one line of 1 to {VARIABLE_NAME_MAX_CHARS} "
                               "characters.")
        if item is None or not isinstance(item, (str, int, float, bool)):
            raise InvalidInput(f"{where}.variables.{key} must be a string, a number or a boolean.")
        if isinstance(item, str) and len(item) > VARIABLE_VALUE_MAX_CHARS:
            raise InvalidInput(f"{where}.variables.{key} is longer than {VARIABLE_VALUE_MAX_CHARS} characters.")
    return dict(value)


def _entry(position: int, raw: dict, where: str, default_zone: str | None) -> _Entry:
    """One contact as given, checked; InvalidInput naming the field."""
    number = e164.normalise(raw.get("number"), field=f"{where}.number")
    name = raw.get("name")
    if name is not None:
        if not isinstance(name, str) or len(name) > NAME_MAX_CHARS or text_problem(name):
            raise InvalidInput(f"{where}.name must be one line of at most {NAME_MAX_CHARS} characters.")
        name = name.strip() or None
    time_zone = raw.get("timeZone")
    if time_zone is not None:
        zone(time_zone, f"{where}.timeZone")
    elif e164.time_zone_of(number) is None and default_zone is None:
        raise InvalidInput(f"{where}.timeZone is needed: the number's region has no time zone and the "
                           "workspace sets none.")
    return _Entry(position, number, name, time_zone, _variables(raw.get("variables"), where) if
                  "variables" in raw else None)


def _workspace_zone(workspace_id: str) -> str | None:
    row = Workspace.select(Workspace.settings).where(Workspace.id == workspace_id).tuples().first()
    return (row[0] or {}).get("timeZone") if row else None


def add(*, workspace_id: str, campaign_id: str, contacts: list[dict], now: datetime | None = None) -> AddReport:
    """Each entry of ``contacts`` ({number, name?, timeZone?, variables?}) added or merged; the bad
    ones reported by index."""
    if not isinstance(contacts, list) or not 1 <= len(contacts) <= MAX_PER_REQUEST:
        raise InvalidInput(f"contacts must list 1 to {MAX_PER_REQUEST} contacts.")
    return _add(workspace_id, campaign_id, [(i, c, f"contacts[{i}]") for i, c in enumerate(contacts)], now)


def import_csv(*, workspace_id: str, campaign_id: str, text: str | bytes, now: datetime | None = None) -> AddReport:
    """The rows of a CSV file (a header naming ``number``, and ``name``, ``timeZone`` and any other
    columns, which become variables) added or merged; the bad rows reported by line."""
    return _add(workspace_id, campaign_id, read_csv(text), now)


def read_csv(text: str | bytes) -> list[tuple[int, dict, str]]:
    """(line, contact, where) for each row of the CSV (models.kernel.csv_table reads the file);
    InvalidInput, besides, for a header without ``number``, with a column named twice or not at
    all, or with too many variable columns. A row's own faults are left to the row's check,
    reported by line. Empty cells are absent fields."""
    table = csv_table.read(text, max_rows=MAX_CSV_ROWS, columns_hint="number, and name, timeZone and variables "
                                                                      "as needed")
    columns = table.header
    if any(text_problem(c) for c in columns) or any(len(c) > VARIABLE_NAME_MAX_CHARS for c in columns):
        raise InvalidInput(f"The CSV header's names must be one line of at most {VARIABLE_NAME_MAX_CHARS} "
                           "characters each.")
    known = {"number": "number", "name": "name", "timezone": "timeZone"}
    fields = [known.get(c.lower(), c) for c in columns]
    if "number" not in fields:
        raise InvalidInput("The CSV header must name a number column (and name, timeZone and variables as "
                           "needed).")
    if len(set(fields)) != len(fields) or "" in fields:
        raise InvalidInput("The CSV header names a column twice, or leaves one without a name.")
    if len([f for f in fields if f not in known.values()]) > MAX_VARIABLES:
        raise InvalidInput(f"The CSV has more than {MAX_VARIABLES} variable columns.")
    rows = []
    for start, cells in table.rows:
        where = f"line {start}"
        if len(cells) != len(fields):
            rows.append((start, {"_problem": f"{where} has {len(cells)} cells; the header names "
                                             f"{len(fields)} columns."}, where))
            continue
        contact, variables = {}, {}
        for field, cell in zip(fields, cells):
            if cell == "":
                continue
            if field in ("number", "name", "timeZone"):
                contact[field] = cell
            else:
                variables[field] = cell
        if variables:
            contact["variables"] = variables
        rows.append((start, contact, where))
    if not rows:
        raise InvalidInput("The CSV has a header but no rows.")
    return rows


def _add(workspace_id: str, campaign_id: str, given: list[tuple[int, dict, str]], now) -> AddReport:
    now = now or utcnow()
    failed: list[Failure] = []
    default_zone = _workspace_zone(workspace_id)
    # The later entry of a number repeated in the request merges into the first.
    entries: dict[str, _Entry] = {}
    repeated = 0
    for position, raw, where in given:
        if not isinstance(raw, dict):
            failed.append(Failure(position, None, f"{where} must be an object with a number."))
            continue
        number = raw.get("number")
        shown = number if isinstance(number, str) else None
        if "_problem" in raw:
            failed.append(Failure(position, None, raw["_problem"]))
            continue
        try:
            for problem_field in ("number", "name", "timeZone"):
                value = raw.get(problem_field)
                if isinstance(value, str) and (problem := text_problem(value)) is not None:
                    raise InvalidInput(f"{where}.{problem_field}: {problem}.")
            entry = _entry(position, raw, where, default_zone)
        except InvalidInput as error:
            failed.append(Failure(position, shown[:64] if shown else None, error.message))
            continue
        if entry.number in entries:
            repeated += 1
            entries[entry.number] = _merged(entries[entry.number], entry)
        else:
            entries[entry.number] = entry
    numbers = list(entries)
    with database.atomic():
        status = lock(workspace_id, campaign_id)[0]
        if status in lifecycle.FINAL:
            raise Conflict(f"The campaign is {status}; contacts cannot be added to it.")
        if not numbers:
            return AddReport(0, repeated, 0, failed)
        existing = {number: (contact_id, state) for contact_id, number, state in
                    _K.in_workspace(workspace_id, _K.id, _K.number, _K.state)
                    .where((_K.campaign == campaign_id) & _K.number.in_(numbers)).tuples()}
        suppressed = do_not_call.suppressed_among(workspace_id, numbers, now)
        merged, rows = repeated, []
        for number, entry in entries.items():
            if number in existing:
                merged += 1
                contact_id, state = existing[number]
                if state == PENDING:
                    _update(workspace_id, contact_id, entry, now)
                continue
            rows.append({"workspace": workspace_id, "campaign": campaign_id, "number": number, "name": entry.name,
                         "time_zone": entry.time_zone or e164.time_zone_of(number) or default_zone,
                         "variables": entry.variables or {}, "state": SUPPRESSED if number in suppressed else PENDING,
                         "attempts": 0, "next_attempt_at": now, "updated_at": now,
                         # A microsecond apart, so that the list (by created_at, id) keeps the request's order.
                         "created_at": now + timedelta(microseconds=len(rows))})
        try:
            with database.atomic():
                for start in range(0, len(rows), _INSERT_BATCH):
                    _K.insert_many(rows[start:start + _INSERT_BATCH]).execute()
        except IntegrityError:
            # The campaign's row lock orders adds to one campaign; this is a safety net.
            raise Conflict("Another request added some of these numbers at the same time; send it again.") from None
    held = sum(1 for row in rows if row["state"] == SUPPRESSED)
    return AddReport(len(rows) - held, merged, held, failed)


def _merged(first: _Entry, later: _Entry) -> _Entry:
    return _Entry(first.position, first.number, later.name if later.name is not None else first.name,
                  later.time_zone or first.time_zone,
                  later.variables if later.variables is not None else first.variables)


def _update(workspace_id: str, contact_id: str, entry: _Entry, now) -> None:
    changes = {"updated_at": now}
    if entry.name is not None:
        changes["name"] = entry.name
    if entry.time_zone is not None:
        changes["time_zone"] = entry.time_zone
    if entry.variables is not None:
        changes["variables"] = entry.variables
    _K.update(**changes).where((_K.workspace == workspace_id) & (_K.id == contact_id)).execute()

