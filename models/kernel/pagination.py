"""Limit/offset pages, and the `pagination` object every list response carries.

A page costs one statement whatever its size: its rows, each carrying the list's total in a last
column (an uncorrelated subquery, which the database evaluates once per statement). Only a page
past the end, having no row to carry it, costs a second statement for the total. On PostgreSQL
every statement is a round trip (76 µs here for ``SELECT 1``), so a list of the next group costs
the same one as the list of API keys.

The rows are ordered along an index that starts with the scope (workspace) and ends with a unique
column, so that the database reads just the page; the total has no join and no order, so that it
counts index entries.
"""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, NamedTuple, TypeVar

from peewee import Query, fn

from models.kernel.sql import Prepared, with_parameters

R = TypeVar("R", bound=NamedTuple)


@dataclass(frozen=True)
class Page(Generic[R]):
    items: list[R]
    total: int
    limit: int
    offset: int

    def pagination(self) -> dict:
        return {"total": self.total, "limit": self.limit, "offset": self.offset}


class PageQuery:
    """``PageQuery(lambda workspace_id, limit, offset: <the rows, ordered, limited>,
                   lambda workspace_id: <a count of them>)``: both compiled once (see
    ``models.kernel.sql.Prepared``); the count's parameters are a subset of the rows'."""

    def __init__(self, rows: Callable[..., Query], total: Callable[..., Query]) -> None:
        total_names = tuple(inspect.signature(total).parameters)

        @functools.wraps(rows)  # Prepared reads the parameter names through __wrapped__
        def counted(**params) -> Query:
            count = total(**{name: params[name] for name in total_names})
            return rows(**params).select_extend(count.alias("total"))

        self._rows = Prepared(counted)
        self._total = Prepared(total)

    def page(self, record: type[R], *, limit: int, offset: int, **params) -> Page[R]:
        items, total = self._rows.records_and_last(record, limit=limit, offset=offset, **params)
        if total is None:  # no row to carry it: an empty list, or an offset past its end
            total = self._total.scalar(**params) if offset else 0
        return Page(items=items, total=total, limit=limit, offset=offset)


def workspace_list(model, columns, *, order_by: tuple, names: tuple[str, ...] = (),
                   where: Callable[[dict], list] | None = None) -> PageQuery:
    """The PageQuery of a workspace's ``model`` rows in ``order_by``, narrowed by the conditions
    ``where(params)`` returns from the parameters ``names``: a list whose filters vary builds one
    per set of filters (``functools.cache`` on the names) and each is compiled once."""
    def narrowed(query, params):
        conditions = where(params) if where else ()
        return query.where(*conditions) if conditions else query

    def rows(**params):
        return (narrowed(model.in_workspace(params["workspace_id"], *columns), params)
                .order_by(*order_by).limit(params["limit"]).offset(params["offset"]))

    def total(**params):
        return narrowed(model.in_workspace(params["workspace_id"], fn.COUNT(model.id)), params)

    return PageQuery(with_parameters(rows, ("workspace_id", "limit", "offset", *names)),
                     with_parameters(total, ("workspace_id", *names)))
