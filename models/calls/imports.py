"""Calls imported from a file: historical calls (exported from another platform, say), as CSV or
NDJSON, each row recorded as the end-of-call-report ingest records a report.

A file is read whole first (models.kernel.csv_table reads a CSV: header, line numbers, the row
limit; an NDJSON file is one JSON object per line), and a file that cannot be read is refused
with nothing imported. Then each row stands alone: a bad one is reported by its line and why, and
keeps no other out. A row is recorded by ``models.calls.calls.ingest`` with the subscribers the
caller gives (models.call_recorded says what an imported call triggers), so an import is
idempotent on callId as reports are: a row whose call is recorded with the same content is
``alreadyPresent``, one whose call differs is reported as a conflict naming the fields, and a
callId that is another workspace's call is recorded under an id of the workspace's own.

Rows are recorded ``BATCH`` to a transaction: a file of 10,000 rows commits 20 times rather than
10,000 (or once, holding the database's write lock on SQLite for the whole file).
"""
from __future__ import annotations

import math
import re
import uuid
from datetime import datetime, timezone
from typing import NamedTuple

import orjson

from models.calls.calls import CALL_TYPES, Report, Subscriber, hold_call_counts, ingest
from models.kernel import csv_table
from models.kernel.db import database, unit_of_work
from models.kernel.errors import Conflict, InvalidInput
from models.kernel.text import printable, text_problem

MAX_ROWS = 10_000
BATCH = 500
MAX_TAGS = 50
MAX_STRUCTURED_FIELDS = 100
MEDIA_TYPES = ("text/csv", "application/x-ndjson")
REQUIRED = ("callId", "startedAt", "endedAt")
# Each column's longest value, and whether it may run over several lines; the report's limits.
TEXT_COLUMNS = {"status": (100, False), "endedReason": (100, False), "callEndReasonCategory": (100, False),
                "customer": (64, False), "phoneNumber": (64, False), "recordingUrl": (2048, False),
                "summary": (100_000, True), "transcript": (900_000, True)}
COLUMNS = (*REQUIRED, "durationMs", "durationSeconds", "answeredAt", "callType", "agentId", *TEXT_COLUMNS, "tags",
           "structuredData")
_FREE_TEXT = frozenset(column for column, (_, multiline) in TEXT_COLUMNS.items() if multiline)
_BY_LOWER = {column.lower(): column for column in COLUMNS}


class Failure(NamedTuple):
    line: int
    call_id: str | None  # the row's callId as given, when it has one
    reason: str


class Note(NamedTuple):
    """An imported row's warning (the ingest's): an unknown agent, a callId recorded under another id."""
    line: int
    call_id: str
    recorded_as: str
    message: str


class ImportReport(NamedTuple):
    imported: int
    already_present: int
    failed: list[Failure]
    warnings: list[Note]


def import_calls(*, workspace_id: str, body: bytes, media_type: str,
                 subscribers: tuple[Subscriber, ...]) -> ImportReport:
    """Record each good row of the file (``media_type``: text/csv or application/x-ndjson) as a call
    of the workspace, ``subscribers`` run for each new one; InvalidInput for a file that cannot be
    read as a whole (nothing is imported then)."""
    rows = read_csv(body) if media_type == "text/csv" else read_ndjson(body)
    failed: list[Failure] = []
    good: list[tuple[int, Report]] = []
    for line, fields in rows:
        if isinstance(fields, str):  # the line itself could not be read
            failed.append(Failure(line, None, fields))
            continue
        try:
            good.append((line, report_of(fields, workspace_id)))
        except InvalidInput as exc:
            failed.append(Failure(line, _shown_id(fields), exc.message))
    imported = present = 0
    notes: list[Note] = []
    for start in range(0, len(good), BATCH):
        with unit_of_work(), database.atomic():
            hold_call_counts(workspace_id)
            for line, report in good[start:start + BATCH]:
                try:
                    outcome = ingest(report, subscribers=subscribers)
                except Conflict as exc:
                    failed.append(Failure(line, report.call_id, f"conflict: {exc.message}"))
                    continue
                except InvalidInput as exc:  # the rules between fields the ingest checks (durationMs, tags)
                    failed.append(Failure(line, report.call_id, exc.message))
                    continue
                if not outcome.created:
                    present += 1
                    continue
                imported += 1
                notes += [Note(line, report.call_id, outcome.call_id, warning) for warning in outcome.warnings]
    failed.sort(key=lambda failure: failure.line)
    return ImportReport(imported, present, failed, notes)


# --- reading the file ---------------------------------------------------------------------------

def read_csv(body: bytes) -> list[tuple[int, dict]]:
    """(line, {column: cell}) for each row, empty cells left out; InvalidInput for an unknown or
    repeated column, a required one missing, or a file csv_table cannot read. A row with more
    cells than the header has columns is read as a reason it fails."""
    table = csv_table.read(body, max_rows=MAX_ROWS, columns_hint=",".join(COLUMNS))
    unknown = [cell for cell in table.header if cell.lower() not in _BY_LOWER]
    if unknown:
        raise InvalidInput(f"The CSV header names unknown columns: {printable(', '.join(unknown), 80)}; the "
                           f"columns are {', '.join(COLUMNS)}.")
    columns = [_BY_LOWER[cell.lower()] for cell in table.header]
    if len(set(columns)) != len(columns):
        raise InvalidInput("The CSV header names a column twice.")
    if missing := [column for column in REQUIRED if column not in columns]:
        raise InvalidInput(f"The CSV header has no {', '.join(missing)} column; {', '.join(REQUIRED)} are required.")
    rows = []
    for line, cells in table.rows:
        if len(cells) > len(columns):
            rows.append((line, f"the row has {len(cells) - len(columns)} cell(s) more than the header has columns."))
            continue
        # A spreadsheet may pad a cell; free text is kept as it is.
        fields = {column: cell if column in _FREE_TEXT else cell.strip()
                  for column, cell in zip(columns, cells) if cell.strip()}
        for column in ("tags", "structuredData"):
            if column in fields:
                fields[column] = _csv_list(fields[column]) if column == "tags" else _csv_json(fields[column])
        rows.append((line, fields))
    return rows


def read_ndjson(body: bytes) -> list[tuple[int, dict | str]]:
    """(line, the line's object) for each non-blank line, or (line, why it cannot be read);
    InvalidInput for a file that is not UTF-8, holds a NUL or has more than MAX_ROWS rows."""
    try:
        text = body.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"The NDJSON body is not valid UTF-8: {exc.reason} at byte {exc.start}.") from None
    if "\x00" in text:
        raise InvalidInput(f"The NDJSON body must not contain a NUL character (at position {text.index(chr(0))}).")
    rows: list[tuple[int, dict | str]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        if len(rows) == MAX_ROWS:
            raise InvalidInput(f"The NDJSON body has more than {MAX_ROWS} rows; import it in parts.")
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            rows.append((number, "the line is not a JSON object: it cannot be read as JSON."))
            continue
        if not isinstance(value, dict):
            rows.append((number, "the line is not a JSON object."))
            continue
        unknown = sorted(key for key in value if key not in COLUMNS)
        if unknown:
            rows.append((number, f"unknown fields: {printable(', '.join(unknown), 80)}; the fields are "
                                 f"{', '.join(COLUMNS)}."))
            continue
        rows.append((number, {key: item for key, item in value.items() if item is not None}))
    return rows


def _csv_list(cell: str) -> list[str]:
    """A CSV cell of tags, separated by ';' as the export writes them."""
    return [tag for tag in cell.split(";") if tag.strip()]


def _csv_json(cell: str):
    try:
        return orjson.loads(cell)
    except orjson.JSONDecodeError:
        return _UNREADABLE


_UNREADABLE = object()


# --- one row --------------------------------------------------------------------------------------

def report_of(fields: dict, workspace_id: str) -> Report:
    """The row as a report of the workspace; InvalidInput naming the field and its rule. The report's
    ``raw`` is the row's fields as given, but for a duration given in seconds, kept as durationMs:
    the same call in a CSV or an NDJSON file reads the same, so importing it again finds it."""
    for column in REQUIRED:
        if column not in fields:
            raise InvalidInput(f"{column} is required.")
    call_id = _uuid(fields["callId"], "callId")
    started_at, ended_at = _moment(fields["startedAt"], "startedAt"), _moment(fields["endedAt"], "endedAt")
    if "answeredAt" in fields:  # kept as given, as a report's own field: the call detail records read it
        _moment(fields["answeredAt"], "answeredAt")
    raw = {**fields, "callId": call_id}
    if "durationMs" in fields and "durationSeconds" in fields:
        raise InvalidInput("give durationMs or durationSeconds, not both.")
    if "durationSeconds" in raw:
        raw["durationMs"] = _number(_duration(raw.pop("durationSeconds"), "durationSeconds") * 1000)
    elif "durationMs" in raw:
        raw["durationMs"] = _number(_duration(raw["durationMs"], "durationMs"))
    duration_ms = raw.get("durationMs")
    if duration_ms is None:
        duration_ms = (ended_at - started_at).total_seconds() * 1000
    call_type = fields.get("callType")
    if call_type is not None and call_type not in CALL_TYPES:
        raise InvalidInput(f"callType must be one of {', '.join(CALL_TYPES)}.")
    agent_id = _uuid(fields["agentId"], "agentId") if "agentId" in fields else None
    if agent_id is not None:
        raw["agentId"] = agent_id
    for column, (longest, multiline) in TEXT_COLUMNS.items():
        if column in fields:
            _text(fields[column], column, longest, multiline)
    tags = fields.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        raise InvalidInput("tags must be a list of strings (in a CSV: separated by ';').")
    if len(tags) > MAX_TAGS:
        raise InvalidInput(f"tags must hold at most {MAX_TAGS} tags; {len(tags)} given.")
    structured = fields.get("structuredData", {})
    if not isinstance(structured, dict):
        raise InvalidInput("structuredData must be a JSON object of field names and values.")
    if len(structured) > MAX_STRUCTURED_FIELDS:
        raise InvalidInput(f"structuredData must hold at most {MAX_STRUCTURED_FIELDS} fields.")
    return Report(call_id=call_id, workspace_id=workspace_id, started_at=started_at, ended_at=ended_at,
                  duration_ms=float(duration_ms), agent_id=agent_id, call_type=call_type,
                  status=fields.get("status"), call_end_reason_category=fields.get("callEndReasonCategory"),
                  ended_reason=fields.get("endedReason"), customer=fields.get("customer"),
                  recording_url=fields.get("recordingUrl"), summary=fields.get("summary"),
                  transcript=fields.get("transcript"), sent_at=None, structured_data=structured, tags=tags, raw=raw)


def _shown_id(fields: dict) -> str | None:
    value = fields.get("callId")
    return printable(value, 40) if isinstance(value, str) else None


def _uuid(value, field: str) -> str:
    """A UUID in its hyphenated form (the contract's Uuid), lower case."""
    if not isinstance(value, str) or not _UUID.fullmatch(value):
        raise InvalidInput(f"{field} must be a UUID, such as 0b7c5c7e-3a52-4a55-9f57-6f0f1d6c1a2b.")
    return str(uuid.UUID(value))


_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _moment(value, field: str) -> datetime:
    """An ISO 8601 moment with an offset, as stored: naive UTC."""
    try:
        parsed = datetime.fromisoformat(value) if isinstance(value, str) and len(value) <= 64 else None
    except ValueError:
        parsed = None
    if parsed is None:
        raise InvalidInput(f"{field} must be an ISO 8601 date-time, such as 2026-11-23T09:00:00Z.")
    if parsed.tzinfo is None:
        raise InvalidInput(f"{field} must carry a time zone offset, such as Z or +02:00.")
    try:
        return parsed.astimezone(timezone.utc).replace(tzinfo=None)
    except OverflowError:
        raise InvalidInput(f"{field} must fall within the years 1 to 9999 in UTC.") from None


def _duration(value, field: str) -> float:
    """A number of at least 0 (a CSV cell's text read as one)."""
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            value = None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise InvalidInput(f"{field} must be a number of at least 0.")
    return float(value)


def _number(value: float) -> int | float:
    """An integral figure as an int, as JSON would carry it, so that both formats compare alike."""
    return int(value) if value.is_integer() and abs(value) < 2 ** 53 else value


def _text(value, field: str, longest: int, multiline: bool) -> None:
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string.")
    if len(value) > longest:
        raise InvalidInput(f"{field} must be at most {longest} characters; {len(value)} given.")
    if problem := text_problem(value, multiline=multiline):
        raise InvalidInput(f"{field} {problem}.")
