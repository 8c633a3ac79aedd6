"""Work claimed by workers with a lease: the one way every kind of background work is taken.

A kind of work is a table whose rows wait to be done (transcription jobs, webhook events, campaign
contacts; simulation and optimization runs next). A worker claims the first due row with one
UPDATE whose subquery picks it, FOR UPDATE SKIP LOCKED on PostgreSQL, so that workers in several
processes take different rows without waiting on each other (SQLite has one writer at a time).
``claim_many`` takes up to N due rows in that same one statement (its subquery's LIMIT a
parameter), for a worker that hands out work in batches (a call runtime asking for 10 contacts):
one round trip whatever N, never a statement per row.
The claim sets a lease: no other worker takes the row while the lease lasts, and if the worker's
process dies the lease runs out and the row is due again, so a restart loses no work. A worker
that needs longer renews its lease. Each claim leaves a token on the row (its lease's end or its
attempt count): an outcome or a renewal is stored only while the row still holds the token, so a
late outcome of a lease that ran out (the row taken since by another worker) changes nothing. A
failed attempt is retried after a delay with full jitter (``backoff_s``).
"""
from __future__ import annotations

import random
import threading
from dataclasses import dataclass

from models.kernel.db import database, is_postgres
from models.kernel.sql import Statement


@dataclass(frozen=True)
class LeasedWork:
    """One kind of leased work: its table and key, what makes a row due, the order in which due
    rows are taken, what a claim sets, and what it returns. The SQL fragments name the table's
    columns, prefixed with ``w.`` where the candidate row is meant, and mark parameters ``{p}``."""
    table: str
    key: str
    due: str
    order: str
    claim_sets: str
    returning: str
    token: str  # the column whose value a claim leaves as its token (its lease's end, its attempt)

    def __post_init__(self) -> None:
        # Compiled once per kind, as every statement a worker repeats is (models.kernel.sql): a
        # worker asks every poll. PostgreSQL locks the candidate row; SQLite has one writer anyway.
        claim = (f"UPDATE {self.table} SET {self.claim_sets} WHERE {self.key} = (SELECT w.{self.key} "
                 f"FROM {self.table} w WHERE {self.due} ORDER BY {self.order} LIMIT 1{{lock}}) "
                 f"RETURNING {self.returning}")
        object.__setattr__(self, "_claim", {postgres: Statement(claim.replace(
            "{lock}", " FOR UPDATE OF w SKIP LOCKED" if postgres else "")) for postgres in (True, False)})
        # On PostgreSQL the picked keys are an array the subquery fills once, looked up by key: as
        # ``IN (subquery)``, a plan made for any LIMIT (a prepared statement's generic plan) may
        # join the whole table against them. The order should be an index's, so that the plan reads
        # that index and stops at the LIMIT, whatever LIMIT it was planned for.
        many = (f"UPDATE {self.table} SET {self.claim_sets} WHERE {self.key} {{in}}(SELECT w.{self.key} "
                f"FROM {self.table} w WHERE {self.due} ORDER BY {self.order} LIMIT {{p}}{{lock}}){{end}} "
                f"RETURNING {self.returning}")
        object.__setattr__(self, "_claim_many", {
            True: Statement(many.replace("{in}", "= ANY(ARRAY").replace("{end}", ")")
                            .replace("{lock}", " FOR UPDATE OF w SKIP LOCKED")),
            False: Statement(many.replace("{in}", "IN ").replace("{end}", "").replace("{lock}", ""))})
        object.__setattr__(self, "_renew", Statement(
            f"UPDATE {self.table} SET lease_until = {{p}} WHERE {self.key} = {{p}} AND {self.token} = {{p}}"))

    def claim(self, *params):
        """The claimed row's ``returning`` columns, or None when nothing is due. ``params``: those
        of ``claim_sets``, then those of ``due``, in the order their markers appear."""
        with database.atomic():
            return self._claim[is_postgres()].one(*params)

    def claim_many(self, limit: int, *params) -> list:
        """The ``returning`` columns of each of up to ``limit`` claimed rows (none when nothing is
        due), in one statement. ``params``: those of ``claim_sets``, then those of ``due``."""
        if limit <= 0:
            return []
        if database.in_transaction():  # the caller's transaction: a savepoint would cost two round trips
            return self._claim_many[is_postgres()].all(*params, limit)
        with database.atomic():
            return self._claim_many[is_postgres()].all(*params, limit)

    def renew(self, key, *, token, until) -> bool:
        """The lease of row ``key`` extended to ``until``, if the row still holds the claim's
        ``token``; False if it is no longer the caller's (done, put back, deleted, or taken by
        another worker once the lease ran out)."""
        with database.atomic():
            return self._renew.execute(until, key, token).rowcount == 1


# The threads of this process waiting for work of each kind (by table), told when rows of it were
# committed due: they claim at once instead of at their next poll. Rows written by another process
# are found at the poll.
_waiting: dict[str, list] = {}
_waiting_lock = threading.Lock()


def on_due(table: str, callback) -> None:
    with _waiting_lock:
        _waiting.setdefault(table, []).append(callback)


def forget(table: str, callback) -> None:
    with _waiting_lock:
        if callback in _waiting.get(table, ()):
            _waiting[table].remove(callback)


def announce_due(table: str) -> None:
    """Rows of ``table`` are due: call once they have committed (``db.after_commit``)."""
    with _waiting_lock:
        callbacks = list(_waiting.get(table, ()))
    for callback in callbacks:
        callback()


def backoff_s(failures: int, base_s: float, max_s: float, rng: random.Random | None = None) -> float:
    """The delay before the retry that follows the ``failures``-th failed attempt: full jitter,
    uniform in [0, min(max_s, base_s * 2^failures)] (about base_s after the first)."""
    ceiling = min(max_s, base_s * 2 ** min(failures, 32))
    return (rng or random).uniform(0, ceiling)
