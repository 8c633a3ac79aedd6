"""Call records and imports: rows of historical calls as a file to import carries them, written as
CSV or NDJSON."""
from __future__ import annotations

import csv
import io
import uuid
from datetime import datetime, timedelta

import orjson

START = datetime(2026, 10, 1, 9, 0, 0)


def import_row(index: int = 0, **fields) -> dict:
    """A historical call's row: a new callId, started ``index`` minutes after START, 42 s long;
    ``fields`` replace or add fields (None removes one)."""
    started = START + timedelta(minutes=index)
    row = {"callId": str(uuid.uuid4()), "startedAt": started.isoformat() + "Z",
           "endedAt": (started + timedelta(seconds=42)).isoformat() + "Z", "durationMs": 42_000,
           "callType": "inbound", "endedReason": "customer-ended-call", "customer": "+14155550123",
           "summary": f"Imported call {index}.", "transcript": "AI: Hello. User: Hi."}
    row.update(fields)
    return {key: value for key, value in row.items() if value is not None}


def csv_body(rows: list[dict], columns: list[str] | None = None) -> bytes:
    """The rows as a CSV file: a header of ``columns`` (every field the rows hold, by default), lists
    joined with ';', objects as JSON."""
    columns = columns or list(dict.fromkeys(key for row in rows for key in row))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row.get(column)) for column in columns])
    return buffer.getvalue().encode()


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ";".join(value)
    if isinstance(value, dict):
        return orjson.dumps(value).decode()
    return str(value)


def ndjson_body(rows: list) -> bytes:
    """One line per row: a dict as JSON, a str as it is (a line that is not JSON, say)."""
    return b"".join((row.encode() if isinstance(row, str) else orjson.dumps(row)) + b"\n" for row in rows)
