"""Call detail records: one line per call, as a billing system reads it.

A record says when the call started, was answered (when its report said so: ``answeredAt``) and
ended, how long it lasted, the minutes it is billed for (``credits.call_minutes``, the rounding the
ledger debits a call by: each started minute), who called whom (the customer's number, masked for
a caller without calls:pii, and the workspace's own number when the report carried one as
``phoneNumber``), its direction and disposition, and what it cost: the credits the ledger debited
for it (its entry ``call:<id>``; 0 when none was, as for an imported call the workspace does not
debit). Records come in a stable order, by start then id, read by keyset a batch at a time (one
short statement each, however far the file goes), so a month of calls is never held in memory.

This module reads the calls and the ledger; it lives with the ledger because the calls package
knows nothing of what a recorded call triggers (models.call_recorded).
"""
from __future__ import annotations

import functools
from datetime import datetime, timezone
from typing import Iterator, NamedTuple

from models.billing.credits import call_minutes
from models.calls.export import customer_number
from models.calls.tables import Call
from models.kernel.db import is_postgres, session
from models.kernel.errors import InvalidInput
from models.kernel.sql import Statement

COLUMNS = ("callId", "startedAt", "answeredAt", "endedAt", "durationSeconds", "billedMinutes", "fromNumber",
           "toNumber", "direction", "disposition", "cost", "agentId", "campaignId")
DIRECTIONS = ("inbound", "outbound", "web")
DISPOSITIONS = ("answered", "completed", "no-answer", "busy", "failed", "voicemail", "other")

# A call's disposition, from its endedReason as call runtimes word it; a reason not listed is read
# by its callEndReasonCategory (below), and a call neither names is ``other``. ``answered``: picked
# up and handed on (forwarded, transferred) rather than ended here.
BY_ENDED_REASON = {
    "customer-ended-call": "completed", "assistant-ended-call": "completed",
    "assistant-said-end-call-phrase": "completed", "assistant-ended-call-after-message-spoken": "completed",
    "exceeded-max-duration": "completed", "silence-timed-out": "completed", "completed": "completed",
    "assistant-forwarded-call": "answered", "call-transferred": "answered", "answered": "answered",
    "customer-did-not-answer": "no-answer", "no-answer": "no-answer",
    "customer-busy": "busy", "busy": "busy",
    "voicemail": "voicemail",
    "failed-to-connect": "failed", "call-failed": "failed", "error": "failed", "invalid-number": "failed",
    "phone-number-invalid": "failed",
}
BY_END_REASON_CATEGORY = {
    "customer": "completed", "assistant": "completed", "completed": "completed",
    "transfer": "answered", "answered": "answered",
    "no-answer": "no-answer", "busy": "busy", "voicemail": "voicemail",
    "error": "failed", "failed": "failed",
}
BATCH = 500


class CdrFilter(NamedTuple):
    """What the records keep; None: no condition. Times are naive UTC, ``until`` exclusive."""
    since: datetime | None = None
    until: datetime | None = None
    agent_id: str | None = None
    direction: str | None = None


def disposition(ended_reason: str | None, category: str | None) -> str:
    """The call's disposition by the fixed tables above (case and surrounding blanks ignored)."""
    reason = (ended_reason or "").strip().lower()
    if reason in BY_ENDED_REASON:
        return BY_ENDED_REASON[reason]
    return BY_END_REASON_CATEGORY.get((category or "").strip().lower(), "other")


def records(*, workspace_id: str, filters: CdrFilter, permissions) -> Iterator[dict]:
    """Each call ``filters`` keeps as a record (a dict of COLUMNS), by start then id, as a caller
    holding ``permissions`` may see it. The filters are checked now (InvalidInput), before a
    streamed answer has started."""
    if filters.since and filters.until and filters.until <= filters.since:
        raise InvalidInput("until must be later than since.")
    if filters.direction is not None and filters.direction not in DIRECTIONS:
        raise InvalidInput(f"direction must be one of {', '.join(DIRECTIONS)}.")
    return _records(workspace_id, filters, permissions)


def _records(workspace_id: str, filters: CdrFilter, permissions) -> Iterator[dict]:
    names = tuple(name for name in CdrFilter._fields if getattr(filters, name) is not None)
    values = [_stamp(v) if isinstance(v, datetime) else v for v in (getattr(filters, n) for n in names)]
    after: tuple | None = None
    while True:
        statement = _statement(names, after is not None, is_postgres())
        keyset = [] if after is None else [after[0], after[0], after[1]]
        with session():  # a streamed file reads each batch in whichever thread runs it
            rows = statement.all(workspace_id, *values, *keyset, BATCH)
        for row in rows:
            yield _record(row, permissions)
        if len(rows) < BATCH:
            return
        after = (rows[-1][1], rows[-1][0])


def _record(row: tuple, permissions) -> dict:
    (call_id, started_at, ended_at, duration_ms, customer, call_type, ended_reason, category, agent_id,
     answered_at, phone_number, campaign_id, amount) = row
    customer = customer_number(customer, permissions)
    ours = phone_number if isinstance(phone_number, str) and phone_number else None
    outbound = call_type == "outbound"
    return {
        "callId": call_id,
        "startedAt": _iso(_read_stamp(started_at)),
        "answeredAt": _moment(answered_at),
        "endedAt": _iso(_read_stamp(ended_at)),
        "durationSeconds": round(duration_ms / 1000, 3),
        "billedMinutes": call_minutes(duration_ms),
        # The customer called in (inbound, web, or a report that does not say) or was called.
        "fromNumber": ours if outbound else customer,
        "toNumber": customer if outbound else ours,
        "direction": call_type if call_type in DIRECTIONS else None,
        "disposition": disposition(ended_reason, category),
        "cost": -int(amount) if amount is not None else 0,
        "agentId": agent_id,
        "campaignId": campaign_id if isinstance(campaign_id, str) and campaign_id else None,
    }


_stamp = Call.started_at.db_value
_read_stamp = Call.started_at.python_value


def _iso(value: datetime) -> str:
    return value.isoformat(timespec="milliseconds") + "Z"


def _moment(value) -> str | None:
    """A report's own answeredAt, when it is an ISO 8601 moment with an offset, in UTC."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None
    try:
        return _iso(parsed.astimezone(timezone.utc).replace(tzinfo=None))
    except OverflowError:
        return None


_CONDITIONS = {"since": "c.started_at >= {p}", "until": "c.started_at < {p}", "agent_id": "c.agent_id = {p}",
               "direction": "c.call_type = {p}"}


@functools.lru_cache(maxsize=None)
def _statement(names: tuple[str, ...], keyset: bool, postgres: bool) -> Statement:
    """The records' statement for one set of filters, from the start or after a (start, id), with
    the report's fields read in the database (a stored report may hold a long transcript)."""
    def field(key: str) -> str:
        return f"(c.payload::jsonb ->> '{key}')" if postgres else f"json_extract(c.payload, '$.{key}')"

    conditions = [_CONDITIONS[name] for name in names]
    if keyset:
        conditions.append("(c.started_at > {p} OR (c.started_at = {p} AND c.id > {p}))")
    return Statement(f"""
        SELECT c.id, c.started_at, c.ended_at, c.duration_ms, c.customer, c.call_type, c.ended_reason,
               c.call_end_reason_category, c.agent_id, {field('answeredAt')}, {field('phoneNumber')},
               {field('campaignId')}, e.amount
        FROM call c
        LEFT JOIN credit_entry e ON e.workspace_id = c.workspace_id AND e.reference = 'call:' || c.id
        WHERE c.workspace_id = {{p}} {''.join(' AND ' + c for c in conditions)}
        ORDER BY c.started_at, c.id
        LIMIT {{p}}""")
