"""The export of a workspace's calls as files: CSV or NDJSON, one row at a time, and what a caller
without calls:pii sees of a customer's number (its last four digits)."""
from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator

import orjson

PII = "calls:pii"


EXPORT_COLUMNS = ("id", "startedAt", "endedAt", "durationMs", "callType", "status", "endedReason",
                   "callEndReasonCategory", "agentId", "agentName", "customer", "customerAlias", "tags", "summary",
                   "recordingUrl", "transcriptionStatus", "transcript")


def mask_phone(number: str | None) -> str | None:
    """Every digit but the last four replaced by '*': '+14155550123' → '+*******0123'."""
    if number is None:
        return None
    digits = sum(c.isdigit() for c in number)
    seen, out = 0, []
    for c in number:
        if c.isdigit():
            seen += 1
            out.append(c if seen > digits - 4 else "*")
        else:
            out.append(c)
    return "".join(out)


def customer_number(number: str | None, permissions) -> str | None:
    """The customer's number as a caller holding ``permissions`` may see it."""
    return number if PII in permissions else mask_phone(number)


def ndjson(rows: Iterable[dict]) -> Iterator[bytes]:
    """Each row (a dict of the file's columns) as one JSON line."""
    for row in rows:
        yield orjson.dumps(row) + b"\n"


def csv_file(rows: Iterable[dict], columns: tuple[str, ...] = EXPORT_COLUMNS) -> Iterator[bytes]:
    """A header and each row (a dict of ``columns``, a list joined with ';'), in chunks of about
    64 KB; a cell a spreadsheet would run as a formula is quoted (the call detail records' file
    is written by the same rule)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_csv_cell(row[column]) for column in columns])
        if buffer.tell() > 65536:
            yield buffer.getvalue().encode()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue().encode()


def _csv_cell(value):
    """A cell a spreadsheet will not run as a formula (=, +, -, @ lead one): quoted with a '."""
    if value is None:
        return ""
    if isinstance(value, list):
        value = ";".join(value)
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value
