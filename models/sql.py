"""SQL compiled once: the statements every request runs, and the pages every list reads.

Peewee compiles a query anew each time it runs one (about a hundred compiler calls for a join,
more than the query costs the database), and builds a model instance per row, field by field
(several times the cost of the row itself). So what runs on every request is compiled once:

- ``Statement``: hand-written SQL that SQLite and PostgreSQL both accept, with ``{p}`` where a
  parameter goes. For the few statements of admission (credential lookup, rate-limit upsert).
- ``Prepared``: a Peewee query built once by a function of named parameters, compiled once per
  placeholder style, then only executed, its rows converted by the selected fields' own
  conversions into a ``NamedTuple`` record. For list pages and single reads of a resource.

Writes, and reads off the hot path, use Peewee's query builder as usual.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

from peewee import SQL, CharField, Field, ForeignKeyField, IntegerField, Query, TextField, fn

from .db import JSONField, database

R = TypeVar("R", bound=NamedTuple)


class Statement:
    def __init__(self, template: str) -> None:
        self.template = " ".join(template.split())
        self._by_style: dict[str, str] = {}

    def sql(self) -> str:
        style = database.param
        text = self._by_style.get(style)
        if text is None:
            text = self._by_style[style] = self.template.format(p=style)
        return text

    def execute(self, *params):
        return database.execute_sql(self.sql(), params)

    def one(self, *params):
        return self.execute(*params).fetchone()

    def all(self, *params) -> list:
        return self.execute(*params).fetchall()


class _Compiled(NamedTuple):
    sql: str
    slots: tuple  # for each placeholder: the parameter's name, or a constant wrapped in a 1-tuple
    converters: tuple  # per selected column: a conversion, or None


class Prepared:
    """``Prepared(lambda workspace_id, limit, offset: Model.select(...).where(...).limit(limit)...)``

    Each parameter may stand wherever a value goes, compared with text or key columns or given to
    limit()/offset() (a marker string takes its place while compiling), but not inside ``in_()``,
    whose length is part of the query's shape: give each shape its own Prepared.
    """

    def __init__(self, build: Callable[..., Query]) -> None:
        self.build = build
        self.names = tuple(inspect.signature(build).parameters)
        self._by_style: dict[tuple[str, bool], _Compiled] = {}

    def _compiled(self, count: bool) -> _Compiled:
        key = (database.param, count)
        compiled = self._by_style.get(key)
        if compiled is None:
            markers = {name: f"\x00{name}\x00" for name in self.names}
            query = self.build(**markers)
            if count:
                query = query.order_by().limit(None).offset(None).select(fn.COUNT(SQL("1")))
            sql, params = query.sql()
            by_marker = {marker: name for name, marker in markers.items()}
            slots = tuple(by_marker.get(p, (p,)) if isinstance(p, str) else (p,) for p in params)
            converters = tuple(_converter(column) for column in query.selected_columns)
            compiled = self._by_style[key] = _Compiled(sql, slots, converters)
        return compiled

    def _execute(self, count: bool, params: dict[str, Any]):
        compiled = self._compiled(count)
        values = [params[slot] if isinstance(slot, str) else slot[0] for slot in compiled.slots]
        return compiled, database.execute_sql(compiled.sql, values)

    def records(self, record: type[R], **params) -> list[R]:
        """Every row, as ``record``s (its fields in the order the query selects them)."""
        compiled, cursor = self._execute(False, params)
        converters = compiled.converters
        make = record._make
        return [make([value if value is None or convert is None else convert(value)
                      for convert, value in zip(converters, row)]) for row in cursor.fetchall()]

    def first(self, record: type[R], **params) -> R | None:
        rows = self.records(record, **params)
        return rows[0] if rows else None

    def count(self, **params) -> int:
        """How many rows the query has, without its order, limit and offset."""
        return self._execute(True, params)[1].fetchone()[0]


def _converter(column):
    """The column's conversion of what the driver returns, or None where both drivers already
    return the Python value (text, integers): a call per cell adds up over a page."""
    node = column.unwrap() if hasattr(column, "unwrap") else column
    if not isinstance(node, Field):
        return None
    target = node.rel_field if isinstance(node, ForeignKeyField) else node
    if isinstance(target, (CharField, TextField, IntegerField)) and not isinstance(target, JSONField):
        return None
    return node.python_value
