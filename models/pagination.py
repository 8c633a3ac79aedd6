"""Limit/offset pages, and the `pagination` object every list response carries.

A page costs two statements whatever its size: the rows, and their total. Both come from one
``Prepared`` query (see models.sql), which takes ``limit`` and ``offset`` among its parameters.
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


def page(query: Prepared, record: type[R], *, limit: int, offset: int, **params) -> Page[R]:
    items = query.records(record, limit=limit, offset=offset, **params)
    # A short first page holds every row: no need to count them.
    total = len(items) if offset == 0 and len(items) < limit else query.count(limit=limit, offset=offset, **params)
    return Page(items=items, total=total, limit=limit, offset=offset)
