"""Calls: what the end-of-call-report webhook records, with their tags; read, filtered, deleted.

Ingest is idempotent on the call runtime's callId: the insert is ``ON CONFLICT DO NOTHING``, so of
two deliveries racing, the second waits for the first's commit (PostgreSQL's unique index, or
SQLite's write lock), finds the row and compares payloads; it never raises a unique violation
and never records a call twice. The answer goes out after the commit: nothing acknowledged is lost.

A list with optional filters is still compiled once (models.kernel.sql): one PageQuery per set of
filters present and per order, built on first use and cached, each condition bound to a
parameter. A filter set's statement is the same whatever the values, so PostgreSQL plans it once
per connection. The export reads by keyset (the list's order, then the id), one short statement
per batch, however deep it goes: an offset costs the rows it skips (at offset 50,000 of 100,000
calls, the database reads 50,000 index entries), a keyset does not.
"""
from __future__ import annotations

import functools
import uuid
import zlib
from datetime import datetime, timedelta
from typing import Callable, NamedTuple

from peewee import (
    JOIN,
    SQL,
    fn,
)

from models.calls.insights import values_by_call
from models.calls.recordings import delete_recording_file, recording_path
from models.calls.tables import Call, CallCount, CallTag
from models.configs.tables import Agent
from models.kernel.db import database, is_postgres, session, unit_of_work, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.pagination import Page, PageQuery
from models.kernel.scoping import same_workspace
from models.kernel.sql import Statement, like, like_pattern, with_parameters
from models.telephony.tables import PhoneAlias

# ---------------------------------------------------------------------------------------------
# The domain.

CALL_TYPES = ("inbound", "outbound", "web")
SORT_COLUMNS = ("startedAt", "durationMs")
TAG_MAX_CHARS = 64
# A report's fields that differ in a retried delivery of the same call: not a conflict.
_DELIVERY_FIELDS = frozenset({"timestamp"})
# How far a report's durationMs may stray from endedAt - startedAt: the larger of the two. A runtime
# may time the call from the answer rather than the dial, a few seconds apart; a figure further off
# is not the call the times describe, and it is what credits are debited by.
DURATION_SLACK_MS = 5_000
DURATION_SLACK_SHARE = 0.1
_max_duration_ms = 86_400_000.0


def configure(*, max_duration_s: float) -> None:
    """The longest call a report may describe (MAX_CALL_DURATION_S)."""
    global _max_duration_ms
    _max_duration_ms = max_duration_s * 1000


class Report(NamedTuple):
    """An end-of-call-report, checked against the contract; ``raw`` is the payload as received
    (unknown fields included), kept and compared on redelivery."""
    call_id: str
    workspace_id: str
    started_at: datetime  # naive UTC, as stored
    ended_at: datetime
    duration_ms: float
    agent_id: str | None
    call_type: str | None
    status: str | None
    call_end_reason_category: str | None
    ended_reason: str | None
    customer: str | None
    recording_url: str | None
    summary: str | None
    transcript: str | None
    sent_at: datetime | None
    structured_data: dict
    tags: list[str]
    raw: dict


# What a recorded call triggers: called with the new call's report inside the ingest's transaction,
# returns its warnings (models.call_recorded lists them).
Subscriber = Callable[[Report], list[str]]


class Ingested(NamedTuple):
    call_id: str
    created: bool  # False: an identical report was recorded before
    warnings: list[str]


class CallRecord(NamedTuple):
    id: str
    workspace_id: str
    agent_id: str | None
    agent_name: str | None
    call_type: str | None
    status: str | None
    call_end_reason_category: str | None
    ended_reason: str | None
    customer: str | None
    started_at: datetime
    ended_at: datetime
    duration_ms: float
    recording_url: str | None
    summary: str | None
    received_at: datetime
    recording_bytes: int | None
    transcription_status: str | None
    customer_alias: str | None  # the phone book's name of the customer number as reported


class CallDetail(NamedTuple):
    call: CallRecord
    tags: list[str]
    transcript: str | None
    sent_at: datetime | None
    payload: dict
    ingest_warnings: list[str]
    structured_data: dict
    recording_content_type: str | None
    recording_uploaded_at: datetime | None
    transcription_error: str | None
    transcription_text: str | None
    transcription_words: list | None
    transcription_language: str | None
    transcribed_at: datetime | None


class CallFilter(NamedTuple):
    """What a list or an export keeps; None: no condition."""
    agent_id: str | None = None
    status: str | None = None
    call_type: str | None = None
    started_from: datetime | None = None  # inclusive
    started_to: datetime | None = None  # exclusive
    tag: str | None = None
    customer: str | None = None
    search: str | None = None
    sort_by: str = "startedAt"
    descending: bool = True


def tag_name(value: str, field: str = "name") -> str:
    """A tag's name, trimmed; InvalidInput naming ``field`` unless 1 to 64 characters remain."""
    name = value.strip()
    if not 1 <= len(name) <= TAG_MAX_CHARS:
        raise InvalidInput(f"{field} must be 1 to {TAG_MAX_CHARS} characters once trimmed; "
                           f"{len(name)} given.")
    return name


def ingest(report: Report, *, subscribers: tuple[Subscriber, ...]) -> Ingested:
    """Record ``report`` as a call of its workspace, once: a redelivery of the same report changes
    nothing; a different report for a recorded callId is a Conflict naming the fields that differ.
    A callId that is already another workspace's call is not used: the call is recorded under an id
    of its own (``own_call_id``), returned with a warning, and a redelivery finds it there. A new
    call's ``subscribers`` (what a recorded call triggers: models.call_recorded) run in its
    transaction, in order, so that none of their effects exists without the call nor the call
    without them; each returns its warnings. Returns after the commit, so an acknowledged report is
    never lost."""
    _check_duration(report)
    tags = _unique_tags(report.tags)
    warnings = []
    # A unit of work of its own when called outside one: what the subscribers defer with
    # after_commit runs once the call has committed, not when this block's savepoint ends.
    with unit_of_work(), database.atomic():
        if report.agent_id and _AGENT_EXISTS.one(report.workspace_id, report.agent_id) is None:
            warnings.append(f"agentId {report.agent_id} names no agent of this workspace; the call keeps the id.")
        own_id = own_call_id(report.workspace_id, report.call_id)
        if _CALL_EXISTS.one(report.workspace_id, own_id) is not None:
            # Recorded under its own id before: so it stays, even once the callId is free again.
            report = report._replace(call_id=own_id)
        if not _insert_call(report, warnings):
            recorded = _redelivered(report)
            if recorded is not None:
                return recorded
            # The callId is another workspace's call. Refusing it would tell this workspace that
            # the id exists elsewhere: the call is recorded under its own id instead.
            warnings.append(f"callId {report.call_id} could not be used; the call is recorded under "
                            f"{own_id}, the id to read it by.")
            report = report._replace(call_id=own_id)
            if not _insert_call(report, warnings):
                recorded = _redelivered(report)
                if recorded is None:  # deleted this very moment, or an id made to collide with it
                    raise Conflict(f"callId {report.call_id} cannot be recorded now; send the report again.")
                return recorded
        stored = len(warnings)
        _COUNT_CALLS.execute(report.workspace_id, _shard(report.call_id), 1)
        if tags:
            now = _stamp(utcnow())
            _insert_tags(len(tags)).execute(*[value for name in tags for value in
                                              (report.workspace_id, report.call_id, name, name.lower(), now)])
        for subscriber in subscribers:
            warnings += subscriber(report)
        if len(warnings) > stored:
            Call.update(ingest_warnings=warnings).where(Call.id == report.call_id).execute()
    return Ingested(report.call_id, True, warnings)


def hold_call_counts(workspace_id: str) -> None:
    """Lock the workspace's call count shards, every one and in shard order (made if missing), for
    a transaction that ingests many calls: a report locks one shard and then perhaps the workspace
    row (its debit), so a batch that took shards as its calls came would hold some while waiting on
    another held by a report, or by another batch that waits on one of its own: a deadlock on
    PostgreSQL. Taken first, they order every batch before or after the others."""
    _HOLD_COUNTS.execute(*[value for shard in range(_COUNT_SHARDS) for value in (workspace_id, shard)])


def own_call_id(workspace_id: str, call_id: str) -> str:
    """The id a workspace's call is recorded under when its callId is another workspace's: made
    from the two, so that a redelivery finds the same call."""
    return str(uuid.uuid5(_OWN_CALL_IDS, f"{workspace_id}/{call_id}"))


def _insert_call(report: Report, warnings: list[str]) -> bool:
    """False: a call has this id already (this workspace's or another's)."""
    return bool(_INSERT_CALL.execute(
        report.call_id, report.workspace_id, report.agent_id, report.call_type, report.status,
        report.call_end_reason_category, report.ended_reason, report.customer, _stamp(report.started_at),
        _stamp(report.ended_at), report.duration_ms, report.recording_url, report.summary, report.transcript,
        _stamp(report.sent_at), _json(report.raw), _json(warnings), _stamp(utcnow())).rowcount)


def outbound_payload(report: Report) -> dict:
    """What subscriptions receive: the report as it came (fields this service does not know
    included), with the fields it may have left out as the call was recorded (durationMs)."""
    recorded = {"callId": report.call_id, "workspaceId": report.workspace_id, "durationMs": report.duration_ms,
                "startedAt": report.started_at.isoformat() + "Z", "endedAt": report.ended_at.isoformat() + "Z"}
    # callId: the id the call is recorded under, which the report's may not be (see ingest).
    return {**recorded, **report.raw, "callId": report.call_id, "type": "end-of-call-report"}


# Ingest runs on every report, so its inserts are compiled once (models.kernel.sql), not built by Peewee
# per request (building them cost as much as the database's work).
_INSERT_CALL = Statement("""
    INSERT INTO call (id, workspace_id, agent_id, call_type, status, call_end_reason_category, ended_reason,
                      customer, started_at, ended_at, duration_ms, recording_url, summary, transcript, sent_at,
                      payload, ingest_warnings, received_at)
    VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p})
    ON CONFLICT (id) DO NOTHING""")
_COUNT_CALLS = Statement("""
    INSERT INTO call_count (workspace_id, shard, calls) VALUES ({p}, {p}, {p})
    ON CONFLICT (workspace_id, shard) DO UPDATE SET calls = call_count.calls + excluded.calls""")
_COUNT_SHARDS = 16
_HOLD_COUNTS = Statement("INSERT INTO call_count (workspace_id, shard, calls) VALUES "
                         + ", ".join(["({p}, {p}, 0)"] * _COUNT_SHARDS)
                         + " ON CONFLICT (workspace_id, shard) DO UPDATE SET calls = call_count.calls")
_AGENT_EXISTS = Statement("SELECT 1 FROM agent WHERE workspace_id = {p} AND id = {p}")
_CALL_EXISTS = Statement("SELECT 1 FROM call WHERE workspace_id = {p} AND id = {p}")
_OWN_CALL_IDS = uuid.UUID("5b0f6c1e-8a43-4d7e-9c2a-1f3e5d7b9a60")
_json = Call.payload.db_value
_stamp = Call.started_at.db_value


def _shard(call_id: str) -> int:
    return zlib.crc32(call_id.encode()) % _COUNT_SHARDS


@functools.lru_cache(maxsize=None)
def _insert_tags(count: int) -> Statement:
    return Statement("INSERT INTO call_tag (workspace_id, call_id, name, name_key, created_at) VALUES "
                     + ", ".join(["({p}, {p}, {p}, {p}, {p})"] * count))


def _check_duration(report: Report) -> None:
    """InvalidInput naming the field, unless the call's times run forward, neither its span nor its
    durationMs passes the longest call, and the two agree within the slack."""
    if report.ended_at < report.started_at:
        raise InvalidInput("endedAt must not be before startedAt.")
    bound = f"{_max_duration_ms:.0f} ms ({_max_duration_ms / 3_600_000:g} h, MAX_CALL_DURATION_S)"
    span_ms = (report.ended_at - report.started_at) / timedelta(milliseconds=1)
    if span_ms > _max_duration_ms:
        raise InvalidInput(f"endedAt must be at most {bound} after startedAt; {span_ms:.0f} ms given.")
    if report.duration_ms > _max_duration_ms:
        raise InvalidInput(f"durationMs must be at most {bound}; {report.duration_ms:.0f} given.")
    slack_ms = max(DURATION_SLACK_MS, DURATION_SLACK_SHARE * span_ms)
    if abs(report.duration_ms - span_ms) > slack_ms:
        raise InvalidInput(f"durationMs ({report.duration_ms:.0f}) must agree with endedAt - startedAt "
                           f"({span_ms:.0f} ms) within {slack_ms:.0f} ms (5 s or 10% of the span, "
                           "whichever is larger).")


def _unique_tags(names: list[str]) -> list[str]:
    seen, tags = set(), []
    for index, value in enumerate(names):
        name = tag_name(value, f"tags[{index}]")
        if name.lower() not in seen:
            seen.add(name.lower())
            tags.append(name)
    return tags


def _redelivered(report: Report) -> Ingested | None:
    """The answer to a report whose call id this workspace recorded before; None when the id is
    another workspace's (or this one's call, deleted this very moment)."""
    existing = (Call.in_workspace(report.workspace_id, Call.payload, Call.ingest_warnings)
                .where(Call.id == report.call_id).first())
    if existing is None:
        return None
    keys = (set(existing.payload) | set(report.raw)) - _DELIVERY_FIELDS
    differing = sorted(key for key in keys if existing.payload.get(key, _ABSENT) != report.raw.get(key, _ABSENT)
                       or type(existing.payload.get(key)) is not type(report.raw.get(key)))
    if differing:
        raise Conflict(f"A different report for call {report.call_id} was recorded already; these fields differ: "
                       f"{', '.join(differing)}.", result={"callId": report.call_id, "differingFields": differing})
    return Ingested(report.call_id, False, existing.ingest_warnings)


_ABSENT = object()
_COUNT = fn.COUNT(SQL("1"))
# The conditions a filter may set, each bound to the parameter of its name.
_CONDITIONS = ("agent_id", "status", "call_type", "started_from", "started_to", "tag", "customer", "search")


def _filtered(query, workspace_id, values: dict):
    """``query`` narrowed by a condition for each name in ``values``, compared with its value
    (a Prepared builder passes its markers, so one compiled statement serves every list with the
    same conditions set)."""
    conditions = []
    for name, value in values.items():
        if name == "tag":
            conditions.append(fn.EXISTS(CallTag.in_workspace(workspace_id, SQL("1")).where(
                (CallTag.call == Call.id) & (CallTag.name_key == value))))
        elif name == "search":
            conditions.append(like(Call.summary, value) | like(Call.transcript, value))
        elif name == "started_from":
            conditions.append(Call.started_at >= value)
        elif name == "started_to":
            conditions.append(Call.started_at < value)
        else:
            conditions.append(getattr(Call, name) == value)
    return query.where(*conditions) if conditions else query


def _summary_columns():
    return (Call.id, Call.workspace, Call.agent_id, Agent.name, Call.call_type, Call.status,
            Call.call_end_reason_category, Call.ended_reason, Call.customer, Call.started_at, Call.ended_at,
            Call.duration_ms, Call.recording_url, Call.summary, Call.received_at, Call.recording_bytes,
            Call.transcription_status, PhoneAlias.name)


def _with_agent(query):
    """``query`` joined with the call's agent (its name) and the phone book's entry of the customer
    number, matched as the call reported it (the phone book holds E.164: a number reported in
    another form finds none), in the same statement: (workspace, number) is a unique index."""
    return (query.join_from(Call, Agent, JOIN.LEFT_OUTER, on=same_workspace(Agent.id == Call.agent_id, Agent, Call))
            .join_from(Call, PhoneAlias, JOIN.LEFT_OUTER,
                       on=same_workspace(PhoneAlias.number == Call.customer, PhoneAlias, Call)))


def _sort_column(f: CallFilter):
    return Call.started_at if f.sort_by == "startedAt" else Call.duration_ms


def _order(f: CallFilter):
    column = _sort_column(f)
    return (column.desc(), Call.id.desc()) if f.descending else (column.asc(), Call.id.asc())


@functools.cache
def _page_query(names: tuple[str, ...], sort_by: str, descending: bool) -> PageQuery:
    """The list's statements for one set of conditions and one order, compiled once."""
    order = _order(CallFilter(sort_by=sort_by, descending=descending))

    def rows(**params):
        values = {name: params[name] for name in names}
        return (_with_agent(_filtered(Call.in_workspace(params["workspace_id"], *_summary_columns()),
                                      params["workspace_id"], values))
                .order_by(*order).limit(params["limit"]).offset(params["offset"]))

    def total(**params):
        if not names:
            # SUM of a BIGINT is NUMERIC on PostgreSQL: cast, so that the total is an int on both.
            return CallCount.in_workspace(params["workspace_id"],
                                          fn.COALESCE(fn.SUM(CallCount.calls), 0).cast("BIGINT"))
        return _filtered(Call.in_workspace(params["workspace_id"], _COUNT), params["workspace_id"],
                         {name: params[name] for name in names})

    return PageQuery(with_parameters(rows, ("workspace_id", "limit", "offset", *names)), with_parameters(total, ("workspace_id", *names)))


def _values(f: CallFilter) -> dict:
    """The conditions ``f`` sets, as the statements compare them."""
    if f.sort_by not in SORT_COLUMNS:
        raise InvalidInput(f"sortBy must be one of {', '.join(SORT_COLUMNS)}.")
    if f.started_from and f.started_to and f.started_to <= f.started_from:
        raise InvalidInput("until must be later than since.")
    values = {name: getattr(f, name) for name in _CONDITIONS if getattr(f, name) is not None}
    if "tag" in values:
        values["tag"] = values["tag"].strip().lower()
    if "search" in values:
        values["search"] = like_pattern(values["search"])
    return values


def list_calls(*, workspace_id: str, filters: CallFilter, limit: int, offset: int) -> Page[tuple[CallRecord, list[str]]]:
    """A page of the workspace's calls that ``filters`` keeps, in its order, each with its tags:
    two statements whatever the page's size (three past the end)."""
    values = _values(filters)
    query = _page_query(tuple(values), filters.sort_by, filters.descending)
    page = query.page(CallRecord, limit=limit, offset=offset, workspace_id=workspace_id, **values)
    tags = tags_by_call(workspace_id, [call.id for call in page.items])
    return Page([(call, tags.get(call.id, [])) for call in page.items], page.total, limit, offset)


def iterate_calls(*, workspace_id: str, filters: CallFilter, batch: int = 500):
    """Every call ``filters`` keeps, in its order, as (record, tags, transcript), read ``batch`` at a
    time by keyset: each batch is one short statement along the list's index, however deep, and an
    export of 100,000 calls holds one batch in memory. The filters are checked now (InvalidInput),
    before a streamed answer has started."""
    return _batches(workspace_id, filters, _values(filters), batch)


def _batches(workspace_id: str, filters: CallFilter, values: dict, batch: int):
    column = _sort_column(filters)
    after = None
    while True:
        query = _with_agent(_filtered(Call.in_workspace(workspace_id, *_summary_columns(), Call.transcript),
                                      workspace_id, values))
        if after is not None:
            value, call_id = after
            if filters.descending:
                query = query.where((column < value) | ((column == value) & (Call.id < call_id)))
            else:
                query = query.where((column > value) | ((column == value) & (Call.id > call_id)))
        with session():  # a streamed export reads each batch in whichever thread runs it
            rows = list(query.order_by(*_order(filters)).limit(batch).tuples())
            records = [CallRecord._make(row[:-1]) for row in rows]
            tags = tags_by_call(workspace_id, [r.id for r in records])
        for record, row in zip(records, rows):
            yield record, tags.get(record.id, []), row[-1]
        if len(rows) < batch:
            return
        last = records[-1]
        after = (last.started_at if filters.sort_by == "startedAt" else last.duration_ms, last.id)


def tags_by_call(workspace_id: str, call_ids: list[str]) -> dict[str, list[str]]:
    """Each call's tags, in the order they were added: one statement."""
    if not call_ids:
        return {}
    found: dict[str, list[str]] = {}
    for call_id, name in _tags_of(len(call_ids)).all(workspace_id, *call_ids):
        found.setdefault(call_id, []).append(name)
    return found


@functools.lru_cache(maxsize=None)
def _tags_of(count: int) -> Statement:
    """The tags of ``count`` calls, compiled once per count (a page holds at most 100 calls, an
    export batch 500): building it with Peewee cost three times what the database does."""
    return Statement("SELECT call_id, name FROM call_tag WHERE workspace_id = {p} AND call_id IN ("
                     + ", ".join(["{p}"] * count) + ") ORDER BY id")


def get_call(*, workspace_id: str, call_id: str) -> CallDetail:
    row = (_with_agent(Call.in_workspace(workspace_id, *_summary_columns(), Call.transcript, Call.sent_at,
                                         Call.payload, Call.ingest_warnings, Call.recording_content_type,
                                         Call.recording_uploaded_at, Call.transcription_error,
                                         Call.transcription_text, Call.transcription_words,
                                         Call.transcription_language, Call.transcribed_at))
           .where(Call.id == call_id).tuples().first())
    if row is None:
        raise NotFound(f"No call {call_id} in this workspace.")
    record = CallRecord._make(row[:len(CallRecord._fields)])
    rest = row[len(CallRecord._fields):]
    return CallDetail(record, tags_by_call(workspace_id, [call_id]).get(call_id, []), rest[0], rest[1], rest[2],
                      rest[3], _structured_data(workspace_id, call_id), *rest[4:])


def _structured_data(workspace_id: str, call_id: str) -> dict:
    return values_by_call(workspace_id=workspace_id, call_ids=[call_id]).get(call_id, {})


def delete_call(*, workspace_id: str, call_id: str) -> None:
    """The call and everything of it: tags, structured values, its transcription job, its recording."""
    with database.atomic():
        path = recording_path(workspace_id, call_id)
        if path is None:
            raise NotFound(f"No call {call_id} in this workspace.")
        if Call.delete().where((Call.workspace == workspace_id) & (Call.id == call_id)).execute():
            _COUNT_CALLS.execute(workspace_id, _shard(call_id), -1)
    if path[0]:
        delete_recording_file(path[0])


def require_call(workspace_id: str, call_id: str, *, lock: bool = False) -> None:
    """NotFound unless the workspace has the call; ``lock``: the row is locked (PostgreSQL) until the
    transaction ends."""
    query = Call.in_workspace(workspace_id, Call.id).where(Call.id == call_id)
    if lock and is_postgres():
        query = query.for_update()
    if query.first() is None:
        raise NotFound(f"No call {call_id} in this workspace.")


def add_tag(*, workspace_id: str, call_id: str, name: str) -> tuple[list[str], bool]:
    """Tag the call with ``name`` (trimmed; a tag it has, in any case, is kept as it is). Returns the
    call's tags and whether this one is new."""
    name = tag_name(name)
    with database.atomic():
        require_call(workspace_id, call_id, lock=True)
        added = database.execute(CallTag.insert(workspace=workspace_id, call=call_id, name=name,
                                                name_key=name.lower(), created_at=utcnow())
                                 .on_conflict_ignore()).rowcount
    return tags_by_call(workspace_id, [call_id]).get(call_id, []), bool(added)


def list_tags(*, workspace_id: str, call_id: str) -> list[str]:
    require_call(workspace_id, call_id)
    return tags_by_call(workspace_id, [call_id]).get(call_id, [])


def remove_tag(*, workspace_id: str, call_id: str, name: str) -> str:
    """Remove the tag ``name`` (any case) from the call; returns the name as the call had it."""
    key = tag_name(name).lower()
    with database.atomic():
        require_call(workspace_id, call_id)
        row = CallTag.in_workspace(workspace_id, CallTag.id, CallTag.name).where(
            (CallTag.call == call_id) & (CallTag.name_key == key)).tuples().first()
        if row is None:
            raise NotFound(f"The call {call_id} has no tag {name.strip()!r}.")
        CallTag.delete().where(CallTag.id == row[0]).execute()
    return row[1]


class Purged(NamedTuple):
    calls: int
    recordings: int
    transcripts: int


def purge_started_before(*, workspace_id: str, cutoff: datetime, dry_run: bool = False,
                         batch: int = 500) -> Purged:
    """Deletes (or, ``dry_run``, counts) the workspace's calls started before ``cutoff``, with
    everything of them (see ``delete_call``), a batch per transaction so that a large purge holds
    no lock for long; recording files go after each batch commits."""
    old = Call.in_workspace(workspace_id).where(Call.started_at < cutoff)
    if dry_run:
        calls, recordings, transcripts = old.select(
            fn.COUNT(Call.id), fn.COUNT(Call.recording_path),
            fn.COUNT(fn.COALESCE(Call.transcript, Call.transcription_text))).tuples().first()
        return Purged(calls, recordings, transcripts)
    totals = Purged(0, 0, 0)
    while True:
        with database.atomic():
            rows = list(old.select(Call.id, Call.recording_path,
                                   fn.COALESCE(Call.transcript, Call.transcription_text).is_null(False))
                        .order_by(Call.started_at, Call.id).limit(batch).tuples())
            if not rows:
                return totals
            ids = [row[0] for row in rows]
            Call.delete().where((Call.workspace == workspace_id) & Call.id.in_(ids)).execute()
            shards: dict[int, int] = {}
            for call_id in ids:
                shards[_shard(call_id)] = shards.get(_shard(call_id), 0) + 1
            for shard, count in shards.items():
                _COUNT_CALLS.execute(workspace_id, shard, -count)
        for _, path, _ in rows:
            if path:
                delete_recording_file(path)
        totals = Purged(totals.calls + len(rows), totals.recordings + sum(1 for r in rows if r[1]),
                        totals.transcripts + sum(1 for r in rows if r[2]))
