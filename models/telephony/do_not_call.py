"""The workspace's do-not-call list: numbers that must never be dialled while they are listed and
not expired.

Whoever hands out work to dial asks here at the moment it does (``listed`` inside its own claim
statement, ``is_suppressed`` or ``suppressed_among`` elsewhere), so that a number listed after its
contact was queued is never dialled.

Adding is an upsert on (workspace, number) in one statement (INSERT ... ON CONFLICT, which both
databases run atomically): two requests adding the same numbers at once leave one row each. A
number already listed keeps its row (id, source, who added it and when) and takes the new
request's terms: its expiry (none given: listed for good) and its reason when one is given; it
counts as ``alreadyListed``, so adding the same list twice is harmless and says so.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import NamedTuple

from peewee import SQL, NodeList, fn

from models.identity.principal import Principal
from models.kernel.db import database, new_id, utcnow
from models.kernel.errors import InvalidInput, NotFound
from models.kernel.pagination import Page, workspace_list
from models.kernel.sql import Prepared, like, like_pattern
from models.telephony import e164
from models.telephony.tables import SuppressedNumber

SOURCES = ("manual", "import", "opt-out", "complaint", "api")
MAX_PER_REQUEST = 1000
MAX_REASON = 500

_S = SuppressedNumber


def _naive_utc(at: datetime | None) -> datetime:
    """``at`` as stored (naive UTC); now when None."""
    if at is None:
        return utcnow()
    return at.astimezone(timezone.utc).replace(tzinfo=None) if at.tzinfo is not None else at


def _in_force(at):
    return _S.expires_at.is_null() | (_S.expires_at > at)


def listed_sql(workspace_column: str, number_column: str) -> str:
    """``listed`` as SQL text, for a statement written by hand (a leased claim's fragments): the
    column names as given, one parameter ``{p}``, the moment."""
    return (f"EXISTS (SELECT 1 FROM suppressed_number s WHERE s.workspace_id = {workspace_column} "
            f"AND s.number = {number_column} AND (s.expires_at IS NULL OR s.expires_at > {{p}}))")


def listed(workspace_column, number_column, at):
    """``EXISTS (a listing of number_column in workspace_column, in force at at)``: a condition for
    a query of another table (a campaign's contacts, say), so that the check is part of the
    statement that claims the work. ``at`` is a naive UTC datetime or a parameter of a Prepared
    query. Served by the unique index (workspace_id, number)."""
    return fn.EXISTS(_S.in_workspace(workspace_column, SQL("1"))
                     .where((_S.number == number_column) & _in_force(at)))


_ONE_LISTED = Prepared(lambda workspace_id, number, at: _S.in_workspace(workspace_id, SQL("1"))
                       .where((_S.number == number) & _in_force(at)).limit(1))


def is_suppressed(workspace_id: str, number: str, at: datetime | None = None) -> bool:
    """Whether ``number`` (E.164) is on the workspace's list and in force at ``at`` (default now)."""
    return _ONE_LISTED.scalar(workspace_id=workspace_id, number=number, at=_naive_utc(at)) is not None


def suppressed_among(workspace_id: str, numbers: Iterable[str], at: datetime | None = None) -> set[str]:
    """Those of ``numbers`` (E.164) listed and in force at ``at`` (default now): one statement per
    thousand numbers, for marking a batch of contacts as they are added."""
    numbers = sorted(set(numbers))
    at = _naive_utc(at)
    found: set[str] = set()
    for start in range(0, len(numbers), MAX_PER_REQUEST):
        chunk = numbers[start:start + MAX_PER_REQUEST]
        found.update(row[0] for row in _S.in_workspace(workspace_id, _S.number)
                     .where(_S.number.in_(chunk) & _in_force(at)).tuples())
    return found


class SuppressionRecord(NamedTuple):
    id: str
    workspace_id: str
    number: str
    reason: str | None
    source: str
    added_by: str
    added_at: datetime
    expires_at: datetime | None

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now


class AddResult(NamedTuple):
    added: int
    already_listed: int
    failed: list[dict]  # {index, number, reason}
    suppressions: list[SuppressionRecord]  # those added or already listed, in the request's order


_COLUMNS = (_S.id, _S.workspace, _S.number, _S.reason, _S.source, _S.added_by, _S.added_at, _S.expires_at)
_ONE = Prepared(lambda workspace_id, suppression_id: _S.in_workspace(workspace_id, *_COLUMNS)
                .where(_S.id == suppression_id))
_BY_NUMBER = Prepared(lambda workspace_id, number: _S.in_workspace(workspace_id, *_COLUMNS)
                      .where(_S.number == number))


_CONDITIONS = {
    "number": lambda p: _S.number == p["number"],
    "prefix": lambda p: NodeList((_S.number, SQL("LIKE"), p["prefix"])),  # digits and +: nothing to escape
    "text": lambda p: like(_S.reason, p["text"]),
    "source": lambda p: _S.source == p["source"],
    "now": lambda p: _in_force(p["now"]),
}


@functools.cache
def _page(names: tuple[str, ...]):
    """Newest first, compiled once per set of filters. A search by number or by reason is one
    condition: ``prefix`` or ``text`` are joined by OR when both are given."""
    def where(params):
        conditions = [_CONDITIONS[name](params) for name in names if name not in ("prefix", "text", "number")]
        searched = [_CONDITIONS[name](params) for name in names if name in ("number", "prefix", "text")]
        if searched:
            either = searched[0]
            for condition in searched[1:]:
                either = either | condition
            conditions.append(either)
        return conditions
    return workspace_list(_S, _COLUMNS, order_by=(_S.added_at.desc(), _S.id.desc()), names=names, where=where)


_DIGITS = re.compile(r"[\d\s().\-+]+")


def _search(q: str) -> dict:
    """What ``q`` searches for: a whole number (normalised) matches it exactly, else its digits
    match the start of numbers (country code first), and the text matches within reasons."""
    values = {"text": like_pattern(q)}
    if _DIGITS.fullmatch(q) and any(c.isdigit() for c in q):
        try:
            values["number"] = e164.normalise(q, field="q")
        except InvalidInput:
            values["prefix"] = "+" + "".join(c for c in q if c.isdigit()) + "%"
    return values


def list_suppressions(*, workspace_id: str, limit: int, offset: int, q: str | None = None,
                      source: str | None = None, include_expired: bool = False,
                      now: datetime | None = None) -> Page[SuppressionRecord]:
    """A page of the list, newest first; expired listings only with ``include_expired``."""
    values: dict = {}
    if q is not None:
        q = q.strip()
        if q:
            values.update(_search(q))
    if source is not None:
        if source not in SOURCES:
            raise InvalidInput(f"source must be one of {', '.join(SOURCES)}.")
        values["source"] = source
    if not include_expired:
        values["now"] = _naive_utc(now)
    names = tuple(sorted(values))
    return _page(names).page(SuppressionRecord, limit=limit, offset=offset, workspace_id=workspace_id, **values)


def get(*, workspace_id: str, suppression_id: str) -> SuppressionRecord:
    record = _ONE.first(SuppressionRecord, workspace_id=workspace_id, suppression_id=suppression_id)
    if record is None:
        raise NotFound(f"No suppressed number {suppression_id} in this workspace.")
    return record


def check(*, workspace_id: str, number: str, now: datetime | None = None) -> tuple[str, SuppressionRecord | None]:
    """``number`` in E.164 and its listing when it is in force now (an expired one is no listing)."""
    number = e164.normalise(number, field="number")
    record = _BY_NUMBER.first(SuppressionRecord, workspace_id=workspace_id, number=number)
    if record is not None and record.expired(_naive_utc(now)):
        record = None
    return number, record


def add(principal: Principal, *, workspace_id: str, numbers: list[dict], source: str = "manual",
        now: datetime | None = None) -> AddResult:
    """Lists each of ``numbers`` (``{number, reason?, expiresAt?}``, expiresAt a datetime): an item
    that cannot be read as a phone number, whose expiry is not in the future, or that repeats an
    earlier item's number is reported in ``failed`` by its index; the others are listed."""
    if source not in SOURCES:
        raise InvalidInput(f"source must be one of {', '.join(SOURCES)}.")
    if not isinstance(numbers, list) or not 1 <= len(numbers) <= MAX_PER_REQUEST:
        raise InvalidInput(f"numbers must list 1 to {MAX_PER_REQUEST} numbers.")
    now = _naive_utc(now)
    failed: list[dict] = []
    rows: dict[str, dict] = {}  # by number, in the request's order
    first_index: dict[str, int] = {}
    for i, item in enumerate(numbers):
        given = item.get("number")
        try:
            number = e164.normalise(given, field=f"numbers[{i}].number")
            expires_at = item.get("expiresAt")
            if expires_at is not None:
                expires_at = _naive_utc(expires_at)
                if expires_at <= now:
                    raise InvalidInput(f"numbers[{i}].expiresAt must be in the future.")
            reason = item.get("reason")
            if reason is not None and (not isinstance(reason, str) or len(reason) > MAX_REASON):
                raise InvalidInput(f"numbers[{i}].reason must be text of at most {MAX_REASON} characters.")
            if number in rows:
                raise InvalidInput(f"numbers[{i}] is {number} again, as numbers[{first_index[number]}] is.")
        except InvalidInput as refused:
            failed.append({"index": i, "number": given if isinstance(given, str) else None, "reason": refused.message})
            continue
        first_index[number] = i
        rows[number] = {"id": new_id(), "workspace": workspace_id, "number": number, "reason": reason or None,
                        "source": source, "added_by": principal.user_id, "added_at": now,
                        "expires_at": expires_at}
    if not rows:
        return AddResult(0, 0, failed, [])
    proposed = {row["id"] for row in rows.values()}
    with database.atomic():
        _upsert(rows.values())
        by_number = {row[2]: SuppressionRecord(*row) for row in _S.in_workspace(workspace_id, *_COLUMNS).where(
            _S.number.in_(list(rows))).tuples()}
    suppressions = [by_number[number] for number in rows]
    # A row that was there kept its id: the ids tell the added from the already listed.
    added = sum(1 for record in suppressions if record.id in proposed)
    return AddResult(added, len(rows) - added, failed, suppressions)


def _upsert(rows) -> None:
    """``rows`` listed, each number already listed taking the row's expiry, and its reason if it has one."""
    # Sorted by number, so that two requests listing overlapping numbers lock their index
    # entries in the same order and wait for one another rather than deadlock.
    _S.insert_many(sorted(rows, key=lambda row: row["number"])).on_conflict(
        conflict_target=[_S.workspace, _S.number],
        update={_S.expires_at: SQL("EXCLUDED.expires_at"),
                _S.reason: fn.COALESCE(SQL("EXCLUDED.reason"), _S.reason)},
    ).execute()


def opt_out(*, workspace_id: str, number: str, reason: str, added_by: str, now: datetime) -> None:
    """``number`` (E.164) listed for good, an entry that was to expire included: the callee asked
    not to be called again (source opt-out)."""
    _upsert([{"id": new_id(), "workspace": workspace_id, "number": number, "reason": reason, "source": "opt-out",
              "added_by": added_by, "added_at": _naive_utc(now), "expires_at": None}])


def delete(*, workspace_id: str, suppression_id: str) -> None:
    with database.atomic():
        if not _S.delete().where((_S.workspace == workspace_id) & (_S.id == suppression_id)).execute():
            raise NotFound(f"No suppressed number {suppression_id} in this workspace.")
