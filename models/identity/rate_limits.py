"""Request limits per minute and per day, exact across processes sharing the database: per
credential, and per client address for the operations that take no credential.

Each counter (a credential, or a client address: ``address_counter``) has one usage row holding
its current minute and day and the hits in each. One
conditional upsert both checks and counts: it adds a hit only if both windows have room (a new
window starts at zero), so the database's row lock, not the process, decides who is admitted,
and a refused request counts in neither window. Windows are fixed (the UTC minute, the UTC day).
A window only moves forward: a process whose clock lags counts into the newer window rather
than reopening an older one.

On PostgreSQL the upsert commits without waiting for its WAL flush (``synchronous_commit``
off for that transaction alone): a server crash may forget the last moment's hits, which
costs a limit nothing worth a disk flush on every request.

Admission on PostgreSQL runs this upsert inside the credential lookup's own statement
(``counting_upsert``, used by models.identity.credentials); ``consume`` is the same count on its own.
"""
from __future__ import annotations

import ipaddress
import math
import time
from dataclasses import dataclass

from models.identity.tables import RateLimitUsage
from models.kernel.sql import Statement


@dataclass(frozen=True)
class Limit:
    per_minute: int
    per_day: int


@dataclass(frozen=True)
class Policy:
    """Which limit a credential gets: its own, else the platform default; and a client address
    calling without a credential: ``anonymous``. None when switched off."""
    enabled: bool = True
    default: Limit | None = None
    anonymous: Limit | None = None

    def limit_for(self, own: Limit | None) -> Limit | None:
        return (own or self.default) if self.enabled else None

    def anonymous_limit(self) -> Limit | None:
        return self.anonymous if self.enabled else None


# A counter's name is a credential's id (a UUID), ``webhook-signing:<workspace>`` (models.identity.access)
# or this prefix and an address: a colon no UUID holds keeps the three apart.
ADDRESS_PREFIX = "address:"
# One IPv6 host is given a /64 to itself (RFC 4291's interface identifiers, SLAAC's privacy
# addresses): counted per address, it could take a fresh one for every request.
IPV6_HOST_PREFIX = 64
# What is not an IP address (a Unix socket's peer, a name a proxy forwarded) shares one counter:
# counted as written, a client free to write it could take a fresh one for every request.
NOT_AN_ADDRESS = ADDRESS_PREFIX + "other"


def address_counter(address: str | None) -> str:
    """The counter of a client address: an IPv4 address (an IPv4-mapped IPv6 one too) by itself, an
    IPv6 address by its /64."""
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return NOT_AN_ADDRESS
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if isinstance(ip, ipaddress.IPv6Address):
        # From the integer, so that a zone (fe80::1%eth0) does not make a counter of its own.
        host_bits = 128 - IPV6_HOST_PREFIX
        return ADDRESS_PREFIX + str(ipaddress.IPv6Network((int(ip) >> host_bits << host_bits, IPV6_HOST_PREFIX)))
    return ADDRESS_PREFIX + str(ip)


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


# Counts the hit of the row inserted, unless the credential's row says a window is full.
_ON_CONFLICT = '''
    ON CONFLICT (credential_id) DO UPDATE SET
        minute_hits = CASE WHEN excluded.minute > rate_limit_usage.minute THEN 1
                           ELSE rate_limit_usage.minute_hits + 1 END,
        minute = CASE WHEN excluded.minute > rate_limit_usage.minute THEN excluded.minute
                      ELSE rate_limit_usage.minute END,
        day_hits = CASE WHEN excluded.day > rate_limit_usage.day THEN 1
                        ELSE rate_limit_usage.day_hits + 1 END,
        day = CASE WHEN excluded.day > rate_limit_usage.day THEN excluded.day
                   ELSE rate_limit_usage.day END
    WHERE (excluded.minute > rate_limit_usage.minute OR rate_limit_usage.minute_hits < {per_minute})
      AND (excluded.day > rate_limit_usage.day OR rate_limit_usage.day_hits < {per_day})
    RETURNING minute_hits, day_hits'''
_INSERT = "INSERT INTO rate_limit_usage (credential_id, minute, minute_hits, day, day_hits)"
# One round trip, one implicit transaction: the SET LOCAL applies to the upsert's commit alone.
NO_FLUSH = "SET LOCAL synchronous_commit TO OFF; "
_HIT = Statement(f"{_INSERT} VALUES ({{p}}, {{p}}, 1, {{p}}, 1) {_ON_CONFLICT.format(per_minute='{p}', per_day='{p}')}",
                 pg_prefix=NO_FLUSH)
_USAGE = Statement("SELECT minute, minute_hits, day, day_hits FROM rate_limit_usage WHERE credential_id = {p}")


def counting_upsert(credential: str, per_minute: str, per_day: str) -> str:
    """The upsert as a sub-statement (PostgreSQL's WITH), for a statement that both authenticates
    and counts (models.identity.credentials): ``credential`` is a SELECT of one row (credential_id, minute,
    day), ``per_minute`` and ``per_day`` expressions of the limit. It returns the hits, or no row
    when the request does not fit: what ``decide`` reads."""
    return (f"{_INSERT} SELECT credential_id, minute, 1, day, 1 FROM ({credential}) AS hit "
            f"{_ON_CONFLICT.format(per_minute=per_minute, per_day=per_day)}")


def windows(now: float) -> tuple[int, int]:
    """The minute and the day ``now`` (epoch seconds) counts in."""
    return int(now // 60), int(now // 86_400)


def consume(credential_id: str, limit: Limit, *, now: float | None = None) -> Decision:
    """Count one request against ``limit`` if it fits in both windows; refuse it otherwise."""
    now = time.time() if now is None else now
    minute, day = windows(now)
    return decide(credential_id, limit, _HIT.one(credential_id, minute, day, limit.per_minute, limit.per_day), now)


def decide(credential_id: str, limit: Limit, hits: tuple[int, int] | None, now: float) -> Decision:
    """The decision on one request given what the upsert returned: the window's hits once this one
    is counted, or None when it was refused."""
    if hits is None:
        return _refusal(credential_id, limit, now, windows(now)[0])
    minute_left, day_left = limit.per_minute - hits[0], limit.per_day - hits[1]
    if minute_left <= day_left:
        return Decision(True, limit.per_minute, minute_left, _reset(now, 60))
    return Decision(True, limit.per_day, day_left, _reset(now, 86_400))


def _refusal(credential_id: str, limit: Limit, now: float, minute: int) -> Decision:
    usage = _USAGE.one(credential_id)
    if usage is not None and usage[0] >= minute and usage[1] >= limit.per_minute:
        return Decision(False, limit.per_minute, 0, _reset(now, 60))
    return Decision(False, limit.per_day, 0, _reset(now, 86_400))


def forget_past_addresses(*, now: float | None = None) -> int:
    """Deletes the counters of client addresses last counted before today (UTC): a credential's
    counter goes with the credential, but addresses come and go by the thousand, and one counted
    on an earlier day holds nothing a new request would not start again. Returns how many."""
    today = windows(time.time() if now is None else now)[1]
    return (RateLimitUsage.delete()
            .where(RateLimitUsage.credential_id.startswith(ADDRESS_PREFIX) & (RateLimitUsage.day < today))
            .execute())


def forget(credential_ids) -> None:
    RateLimitUsage.delete().where(RateLimitUsage.credential_id.in_(list(credential_ids))).execute()


def _reset(now: float, length: int) -> int:
    return max(1, math.ceil((now // length + 1) * length - now))
