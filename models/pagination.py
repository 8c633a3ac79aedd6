"""Limit/offset pages over a query, and the `pagination` object every list response carries."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Page:
    items: list
    total: int
    limit: int
    offset: int

    def pagination(self) -> dict:
        return {"total": self.total, "limit": self.limit, "offset": self.offset}


def paginate(query, *, limit: int, offset: int) -> Page:
    return Page(items=list(query.limit(limit).offset(offset)), total=query.count(), limit=limit, offset=offset)
