"""Limit/offset pages, and the `pagination` object every list response carries.

A page costs two statements whatever its size: the rows, and their total (a short first page
is its own total, so then one). Both are ``Prepared`` queries (see models.sql): the rows ordered
along an index that starts with the scope (workspace) and ends with a unique column, so that the
database reads just the page; the total without joins or order, so that it counts index entries.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, NamedTuple, TypeVar

from .sql import Prepared

R = TypeVar("R", bound=NamedTuple)


@dataclass(frozen=True)
class Page(Generic[R]):
    items: list[R]
    total: int
    limit: int
    offset: int

    def pagination(self) -> dict:
        return {"total": self.total, "limit": self.limit, "offset": self.offset}


def page(rows: Prepared, total: Prepared, record: type[R], *, limit: int, offset: int, **params) -> Page[R]:
    """``rows`` takes ``limit`` and ``offset`` besides ``params``; ``total`` takes ``params``."""
    items = rows.records(record, limit=limit, offset=offset, **params)
    count = len(items) if offset == 0 and len(items) < limit else total.scalar(**params)
    return Page(items=items, total=count, limit=limit, offset=offset)
