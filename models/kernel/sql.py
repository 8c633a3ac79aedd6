"""SQL compiled once: the statements every request runs, and the pages every list reads.

Peewee compiles a query anew each time it runs one (about a hundred compiler calls for a join,
more than the query costs the database), and builds a model instance per row, field by field
(several times the cost of the row itself). So what runs on every request is compiled once:

- ``Statement``: hand-written SQL that SQLite and PostgreSQL both accept, with ``{p}`` where a
  parameter goes. For the few statements of admission (credential lookup, rate-limit upsert).
- ``Prepared``: a Peewee query built once by a function of named parameters, compiled once per
  placeholder style, then only executed, its rows converted by the selected fields' own
  conversions into a ``NamedTuple`` record. For list pages and single reads of a resource.

On PostgreSQL both are server-side prepared statements: PREPARE once per connection, then
EXECUTE, so the server neither parses nor plans them again (that halves the server's CPU for a
credential lookup). The statements live as long as the pooled connection; a pooler between the
service and PostgreSQL must keep sessions (PgBouncer's session mode, not transaction mode).

Writes, and reads off the hot path, use Peewee's query builder as usual.
"""
from __future__ import annotations

import inspect
import itertools
import re
import threading
import weakref
from collections.abc import Callable
from datetime import datetime
from typing import Any, NamedTuple, TypeVar

from peewee import SQL, CharField, DateTimeField, Field, ForeignKeyField, IntegerField, NodeList, Query, TextField, fn

from models.kernel.db import JSONField, database, is_postgres

R = TypeVar("R", bound=NamedTuple)


# Which statements each pooled connection has prepared; a connection that is closed drops out.
_prepared_on: "weakref.WeakKeyDictionary[object, set[str]]" = weakref.WeakKeyDictionary()
_prepared_lock = threading.Lock()
_names = itertools.count(1)


class _ServerPrepared:
    """One statement as PostgreSQL prepares it: ``%s`` placeholders become $1, $2..."""

    def __init__(self, sql: str, prefix: str = "") -> None:
        self.name = f"svc_stmt_{next(_names)}"
        count = 0

        def number(match) -> str:
            nonlocal count
            if match[0] == "%%":
                return "%"
            count += 1
            return f"${count}"

        self.prepare = f"PREPARE {self.name} AS {re.sub(r'%s|%%', number, sql)}"
        self.execute_sql = f"{prefix}EXECUTE {self.name}" + (f" ({', '.join(['%s'] * count)})" if count else "")

    def execute(self, params):
        conn = database.connection()
        with _prepared_lock:
            done = _prepared_on.setdefault(conn, set())
        if self.name not in done:
            database.execute_sql(self.prepare)
            done.add(self.name)
        return database.execute_sql(self.execute_sql, params)


class Statement:
    """``pg_prefix``: statements PostgreSQL runs first in the same round trip (and transaction)."""

    def __init__(self, template: str, *, pg_prefix: str = "") -> None:
        self.template = " ".join(template.split())
        self.pg_prefix = pg_prefix
        self._by_style: dict[str, str] = {}
        self._server: _ServerPrepared | None = None

    def sql(self) -> str:
        style = database.param
        text = self._by_style.get(style)
        if text is None:
            text = self._by_style[style] = self.template.format(p=style)
        return text

    def execute(self, *params):
        if is_postgres():
            if self._server is None:
                self._server = _ServerPrepared(self.sql(), self.pg_prefix)
            return self._server.execute(params)
        return database.execute_sql(self.sql(), params)

    def one(self, *params):
        return self.execute(*params).fetchone()

    def all(self, *params) -> list:
        return self.execute(*params).fetchall()


class _Compiled(NamedTuple):
    sql: str
    slots: tuple  # for each placeholder: the parameter's name, or a constant wrapped in a 1-tuple
    converters: tuple  # per selected column: a conversion, or None
    server: _ServerPrepared | None  # on PostgreSQL


class Prepared:
    """``Prepared(lambda workspace_id, limit, offset: Model.select(...).where(...).limit(limit)...)``

    Each parameter may stand wherever a value goes, compared with text or key columns or given to
    limit()/offset() (a marker string takes its place while compiling), but not inside ``in_()``,
    whose length is part of the query's shape: give each shape its own Prepared.
    """

    def __init__(self, build: Callable[..., Query]) -> None:
        self.build = build
        self.names = tuple(inspect.signature(build).parameters)
        self._by_style: dict[str, _Compiled] = {}

    def _compiled(self) -> _Compiled:
        compiled = self._by_style.get(database.param)
        if compiled is None:
            markers = {name: f"\x00{name}\x00" for name in self.names}
            query = self.build(**markers)
            sql, params = query.sql()
            by_marker = {marker: name for name, marker in markers.items()}
            slots = tuple(by_marker.get(p, (p,)) if isinstance(p, str) else (p,) for p in params)
            converters = tuple(_converter(column) for column in query.selected_columns)
            server = _ServerPrepared(sql) if is_postgres() else None
            compiled = self._by_style[database.param] = _Compiled(sql, slots, converters, server)
        return compiled

    def _execute(self, params: dict[str, Any]):
        compiled = self._compiled()
        values = [params[slot] if isinstance(slot, str) else slot[0] for slot in compiled.slots]
        if compiled.server is not None:
            return compiled, compiled.server.execute(values)
        return compiled, database.execute_sql(compiled.sql, values)

    def records(self, record: type[R], **params) -> list[R]:
        """Every row, as ``record``s (its fields in the order the query selects them)."""
        compiled, cursor = self._execute(params)
        converters = compiled.converters
        make = record._make
        return [make([value if value is None or convert is None else convert(value)
                      for convert, value in zip(converters, row)]) for row in cursor.fetchall()]

    def records_and_last(self, record: type[R], **params) -> tuple[list[R], Any]:
        """Every row but its last column as ``record``s, and that column's value in the first row
        (None without rows): what a page and its total, selected together, come back as."""
        compiled, cursor = self._execute(params)
        converters = compiled.converters[:-1]
        make = record._make
        rows = cursor.fetchall()
        return [make([value if value is None or convert is None else convert(value)
                      for convert, value in zip(converters, row)]) for row in rows], \
            (rows[0][-1] if rows else None)

    def first(self, record: type[R], **params) -> R | None:
        rows = self.records(record, **params)
        return rows[0] if rows else None

    def scalar(self, **params):
        """The first column of the first row: a count, an existence check."""
        row = self._execute(params)[1].fetchone()
        return None if row is None else row[0]


def _converter(column):
    """The column's conversion of what the driver returns, or None where both drivers already
    return the Python value (text, integers): a call per cell adds up over a page."""
    node = column.unwrap() if hasattr(column, "unwrap") else column
    if not isinstance(node, Field):
        return None
    target = node.rel_field if isinstance(node, ForeignKeyField) else node
    if isinstance(target, (CharField, TextField, IntegerField)) and not isinstance(target, JSONField):
        return None
    if isinstance(target, DateTimeField):
        return _timestamp
    return node.python_value


def _timestamp(value):
    """SQLite's stored text ('2026-11-23 10:00:00.123456') or PostgreSQL's datetime, as a datetime."""
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)


def with_parameters(function: Callable[..., Query], names) -> Callable[..., Query]:
    """``function(**params)`` declaring the parameters ``names``: Prepared and PageQuery read a
    builder's parameters from its signature, and a list whose filters vary builds one per set."""
    def build(**params):
        return function(**params)

    build.__signature__ = inspect.Signature(
        [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in names])
    return build


def like_pattern(text: str, *, prefix: bool = False) -> str:
    """``text`` as a LIKE pattern that matches it literally (``%``, ``_`` and ``\\`` escaped for
    ``like``), in lower case: anywhere in the value, or at its start."""
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"{escaped}%" if prefix else f"%{escaped}%"


def like(column, pattern, *, fold: bool = True):
    """``column LIKE pattern ESCAPE '\\'`` (a pattern of ``like_pattern``), the column folded to
    lower case unless ``fold`` is False (a column already folded, or digits)."""
    return NodeList((fn.LOWER(column) if fold else column, SQL("LIKE"), pattern, SQL("ESCAPE '\\'")))
