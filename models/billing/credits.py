"""The credits ledger of a workspace: grants, and the debits the service records for what it does.

Every entry is immutable. ``workspace.credit_balance`` is the ledger's running sum, moved by the
same transaction that inserts the entry (``UPDATE ... SET credit_balance = credit_balance + n``,
which takes the workspace row's lock), so the balance stays exactly the sum however many
processes debit at once, and reading it costs one row.

What is debited, at the prices in ``Prices`` (core.settings):
- a call, from its end-of-call-report: each started minute (61 s is two minutes), once per call
  (the entry's ``reference`` is unique in the workspace, so a redelivered report debits nothing);
- audio transcribed by the speech server, file or stream: each started second.

Below zero: with ``CREDITS_ENFORCED`` on, the speech server refuses new transcriptions (402)
until a grant brings the balance back to zero or above; calls are still recorded (the call has
happened: refusing its report would lose it) and debited. With it off (the default, for a
self-hosted service that bills nobody) the ledger is kept and nothing stops.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from peewee import fn

from models.billing.tables import CreditEntry
from models.kernel.db import database, utcnow
from models.kernel.errors import DomainError, InvalidInput
from models.kernel.pagination import Page, PageQuery, workspace_list
from models.kernel.sql import Prepared, Statement

KINDS = ("grant", "call", "transcription")
MAX_GRANT = 1_000_000_000


class PaymentRequired(DomainError):
    status = 402
    code = "insufficient_credits"


@dataclass(frozen=True)
class Prices:
    call_minute: int = 1
    transcribed_second: int = 1


_prices = Prices()
_enforced = False


def configure(prices: Prices, *, enforced: bool = False) -> None:
    global _prices, _enforced
    _prices, _enforced = prices, enforced


def enforced() -> bool:
    return _enforced


class EntryRecord(NamedTuple):
    id: int
    workspace_id: str
    kind: str
    amount: int
    quantity: float
    unit: str
    reference: str | None
    description: str | None
    created_by: str | None
    created_at: datetime


_MOVE = Statement("UPDATE workspace SET credit_balance = credit_balance + {p} WHERE id = {p}")
_BALANCE = Statement("SELECT credit_balance FROM workspace WHERE id = {p}")
_DEBITED = Statement("SELECT 1 FROM credit_entry WHERE workspace_id = {p} AND reference = {p}")


def _append(workspace_id: str, *, kind: str, amount: int, quantity: float, unit: str, reference: str | None = None,
            description: str | None = None, created_by: str | None = None, now: datetime | None = None) -> int:
    """Insert the entry and move the balance, in the caller's transaction or one of its own."""
    with database.atomic():
        if not _MOVE.execute(amount, workspace_id).rowcount:
            raise InvalidInput(f"No workspace {workspace_id}.")
        row = CreditEntry.create(workspace=workspace_id, kind=kind, amount=amount, quantity=quantity, unit=unit,
                                 reference=reference, description=description, created_by=created_by,
                                 created_at=now or utcnow())
    return row.id


def grant(*, workspace_id: str, credits: int, description: str | None, created_by: str) -> EntryRecord:
    if not 1 <= credits <= MAX_GRANT:
        raise InvalidInput(f"credits must be from 1 to {MAX_GRANT}.")
    entry_id = _append(workspace_id, kind="grant", amount=credits, quantity=credits, unit="credits",
                       description=description, created_by=created_by)
    return get_entry(workspace_id=workspace_id, entry_id=entry_id)


def call_minutes(duration_ms: float) -> int:
    """Started minutes: 0 ms is none, 1 ms to 60 s is one, 60.001 s is two."""
    return max(0, math.ceil(duration_ms / 60_000))


def debit_call(*, workspace_id: str, call_id: str, duration_ms: float) -> None:
    """In the transaction that records the call (models.calls.calls.ingest), once per call id: a report
    of a call deleted since (by its owner or by retention) records the call again but was paid for.
    The check cannot race another debit of the same call: that one waits on the call's row."""
    minutes = call_minutes(duration_ms)
    if not minutes or _DEBITED.one(workspace_id, f"call:{call_id}") is not None:
        return
    _append(workspace_id, kind="call", amount=-minutes * _prices.call_minute, quantity=minutes, unit="minutes",
            reference=f"call:{call_id}")


def debit_transcription(*, workspace_id: str, seconds: float, what: str, credential_id: str | None) -> None:
    """``seconds`` of audio the speech server transcribed (``what``: file or stream)."""
    started = max(0, math.ceil(seconds - 1e-9))
    if started:
        _append(workspace_id, kind="transcription", amount=-started * _prices.transcribed_second,
                quantity=round(seconds, 3), unit="seconds", description=f"{what} transcription",
                created_by=credential_id)


def balance(workspace_id: str) -> int:
    row = _BALANCE.one(workspace_id)
    return 0 if row is None else int(row[0])


def require_credit(workspace_id: str) -> None:
    """PaymentRequired when credits are enforced and the workspace's balance is below zero (see the
    module's docstring)."""
    if _enforced and balance(workspace_id) < 0:
        raise PaymentRequired("This workspace's credit balance is below zero: new transcriptions are refused "
                              "until credits are granted (POST /api/v2/workspace/credits/grants).")


def ledger_sum(workspace_id: str) -> int:
    """The sum of the entries, to check the running balance against."""
    return int(CreditEntry.in_workspace(workspace_id, fn.COALESCE(fn.SUM(CreditEntry.amount), 0)).scalar())


_E = CreditEntry
_COLUMNS = (_E.id, _E.workspace, _E.kind, _E.amount, _E.quantity, _E.unit, _E.reference, _E.description,
            _E.created_by, _E.created_at)
_ONE = Prepared(lambda workspace_id, entry_id: _E.in_workspace(workspace_id, *_COLUMNS).where(_E.id == entry_id))
_FILTERS = {
    "kind": lambda v: _E.kind == v,
    "since": lambda v: _E.created_at >= v,
    "until": lambda v: _E.created_at < v,
}


def get_entry(*, workspace_id: str, entry_id: int) -> EntryRecord:
    return _ONE.first(EntryRecord, workspace_id=workspace_id, entry_id=entry_id)


@functools.cache
def _page(names: tuple[str, ...]) -> PageQuery:
    """The ledger for one set of filters, compiled once, newest first."""
    return workspace_list(_E, _COLUMNS, order_by=(_E.created_at.desc(), _E.id.desc()), names=names,
                          where=lambda params: [_FILTERS[name](params[name]) for name in names])


def list_entries(*, workspace_id: str, limit: int, offset: int, kind: str | None = None,
                 since: datetime | None = None, until: datetime | None = None) -> Page[EntryRecord]:
    """Newest first; ``since`` inclusive, ``until`` exclusive (naive UTC)."""
    stamp = _E.created_at.db_value  # as stored, so SQLite compares text with text
    values = {name: value for name, value in (("kind", kind), ("since", since and stamp(since)),
                                              ("until", until and stamp(until))) if value is not None}
    return _page(tuple(values)).page(EntryRecord, workspace_id=workspace_id, limit=limit, offset=offset, **values)
