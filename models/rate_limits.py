"""Per-credential request limits per minute and per day, exact across processes sharing the database.

Each window is a counter row. One conditional upsert per window both checks and counts, so the
database's row lock, not the process, decides who is admitted: no over-admission under concurrency.
Windows are fixed (the UTC minute, the UTC day).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

from peewee import BigIntegerField, CharField, CompositeKey, IntegerField

from .db import BaseModel, database


@dataclass(frozen=True)
class Limit:
    per_minute: int
    per_day: int


@dataclass(frozen=True)
class Policy:
    """Which limit a credential gets: its own, else the platform default; none when switched off."""
    enabled: bool = True
    default: Limit | None = None

    def limit_for(self, own: Limit | None) -> Limit | None:
        return (own or self.default) if self.enabled else None


@dataclass(frozen=True)
class Decision:
    allowed: bool
    limit: int
    remaining: int
    reset_s: int  # seconds until the window that decided this resets

    def headers(self) -> dict[str, str]:
        """The response headers that report this decision, on any response of either server."""
        headers = {"RateLimit-Limit": str(self.limit), "RateLimit-Remaining": str(self.remaining),
                   "RateLimit-Reset": str(self.reset_s)}
        if not self.allowed:
            headers["Retry-After"] = str(self.reset_s)
        return headers


class RateLimitCounter(BaseModel):
    credential_id = CharField()
    window_kind = CharField()  # "m" (minute) or "d" (day)
    window_start = BigIntegerField()  # epoch seconds // window length
    hits = IntegerField()

    class Meta:
        primary_key = CompositeKey("credential_id", "window_kind", "window_start")


_WINDOWS = (("m", 60), ("d", 86_400))


def consume(credential_id: str, limit: Limit, *, now: float | None = None) -> Decision:
    """Count one request against ``limit`` if it fits in both windows; refuse it otherwise."""
    now = time.time() if now is None else now
    limits = {"m": limit.per_minute, "d": limit.per_day}
    hits: dict[str, int] = {}
    with database.atomic() as txn:
        for kind, length in _WINDOWS:
            count = _hit(credential_id, kind, int(now // length), limits[kind])
            if count is None:
                txn.rollback()
                return Decision(False, limits[kind], 0, _reset(now, length))
            hits[kind] = count
    if hits["m"] == 1:
        # After the commit, never inside it: a request still counting in the previous minute holds
        # that row and waits for the day row this transaction held, a lock cycle.
        _forget_old_windows(credential_id, now)
    kind, length = min(_WINDOWS, key=lambda w: limits[w[0]] - hits[w[0]])
    return Decision(True, limits[kind], limits[kind] - hits[kind], _reset(now, length))


def forget(credential_ids) -> None:
    RateLimitCounter.delete().where(RateLimitCounter.credential_id.in_(list(credential_ids))).execute()


def _hit(credential_id: str, kind: str, window_start: int, limit: int) -> int | None:
    p = database.param
    cursor = database.execute_sql(
        "INSERT INTO rate_limit_counter (credential_id, window_kind, window_start, hits) "
        f"VALUES ({p}, {p}, {p}, 1) "
        "ON CONFLICT (credential_id, window_kind, window_start) "
        "DO UPDATE SET hits = rate_limit_counter.hits + 1 "
        f"WHERE rate_limit_counter.hits < {p} RETURNING hits",
        (credential_id, kind, window_start, limit),
    )
    row = cursor.fetchone()
    return None if row is None else row[0]


def _forget_old_windows(credential_id: str, now: float) -> None:
    C = RateLimitCounter
    C.delete().where(
        (C.credential_id == credential_id)
        & (((C.window_kind == "m") & (C.window_start < int(now // 60)))
           | ((C.window_kind == "d") & (C.window_start < int(now // 86_400))))
    ).execute()


def _reset(now: float, length: int) -> int:
    return max(1, math.ceil((now // length + 1) * length - now))
