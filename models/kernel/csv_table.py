"""CSV bodies (imports of phone numbers, campaign contacts): the one reading of a file as a header
and rows, so that every import refuses an unreadable file the same way and reports a row by the
line it starts on.

A file is UTF-8 (a spreadsheet's byte-order mark is skipped), holds no NUL, starts with a header
naming its columns, and has at most ``max_rows`` rows; blank lines are skipped, their lines still
counted, so that a reported line is the line a spreadsheet shows. A quoted cell may span lines: a
row is reported by the line it starts on. What the columns mean is the importer's.
"""
from __future__ import annotations

import csv
import io
from typing import NamedTuple

from models.kernel.errors import InvalidInput


class Table(NamedTuple):
    header: list[str]  # the header's cells, trimmed
    rows: list[tuple[int, list[str]]]  # (the line a row starts on, counting the header as 1; its cells)


def read(body: bytes | str, *, max_rows: int, columns_hint: str) -> Table:
    """The header and rows of a CSV body; InvalidInput for a file that cannot be read as a whole:
    not UTF-8, a NUL, no header, a broken quote, more than ``max_rows`` rows. ``columns_hint``
    says which columns the header should name (it ends the sentence of a file without one)."""
    if isinstance(body, bytes):
        try:
            body = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"The CSV body is not valid UTF-8: {exc.reason} at byte {exc.start}.") from None
    text = body.removeprefix("\ufeff")  # the byte-order mark a spreadsheet may write first
    if "\x00" in text:
        raise InvalidInput(f"The CSV body must not contain a NUL character (at position {text.index(chr(0))}).")
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None or not any(cell.strip() for cell in header):
            raise InvalidInput(f"The CSV body is empty: its first line must name the columns: {columns_hint}.")
        rows, previous = [], reader.line_num
        for cells in reader:
            line, previous = previous + 1, reader.line_num
            if not any(cell.strip() for cell in cells):
                continue
            if len(rows) == max_rows:
                raise InvalidInput(f"The CSV body has more than {max_rows} rows; import it in parts.")
            rows.append((line, cells))
    except csv.Error as exc:
        raise InvalidInput(f"The CSV body cannot be read at line {reader.line_num}: {exc}.") from None
    return Table([cell.strip() for cell in header], rows)
