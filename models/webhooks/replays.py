"""The webhook-ids of the signed reports taken in, so that a replay of one is known.

A signed end-of-call-report verifies while its timestamp is within five minutes of the server's
clock either way (models.webhooks.signing_secrets), so a copy of one, sent again unchanged, would
verify for up to ten minutes after the first arrived. Each webhook-id is remembered per workspace
for REMEMBER_S, longer than that, in the transaction that acts on the report: a report refused on
the way (400, 409) leaves no id behind, and its sender's retry is taken. The insert on the key is
the arbiter: of two copies arriving at once, the second waits on the first's uncommitted row and
then finds it (PostgreSQL), or runs after it (SQLite's one writer). A row older than REMEMBER_S
counts as gone, and is reused by its id's next report; the periodic purge of each process
(api.retention_worker) deletes the rest, outside any report's transaction, so that no report waits
on another's deletes.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from models.kernel.db import utcnow
from models.kernel.sql import Statement
from models.webhooks.signing_secrets import TOLERANCE_S
from models.webhooks.tables import ReceivedWebhook

# A signature verifies for 2 * TOLERANCE_S at most after its first arrival; then a margin.
REMEMBER_S = 2 * TOLERANCE_S + 5 * 60


def first_receipt(*, workspace_id: str, webhook_id: str, now: datetime | None = None) -> bool:
    """True if the workspace has not taken in ``webhook_id`` within REMEMBER_S, and remembers it
    from now on, with the caller's transaction; False for a replay."""
    now = now or utcnow()
    forgotten = _stamp(now - timedelta(seconds=REMEMBER_S))
    return _REMEMBER.execute(workspace_id, webhook_id, _stamp(now), forgotten).rowcount == 1


def forget_expired(*, now: datetime | None = None) -> int:
    """Deletes the ids remembered longer than REMEMBER_S, of every workspace; returns how many."""
    cutoff = (now or utcnow()) - timedelta(seconds=REMEMBER_S)
    return ReceivedWebhook.delete().where(ReceivedWebhook.received_at < cutoff).execute()


_REMEMBER = Statement("""
    INSERT INTO received_webhook (workspace_id, webhook_id, received_at) VALUES ({p}, {p}, {p})
    ON CONFLICT (workspace_id, webhook_id) DO UPDATE SET received_at = excluded.received_at
    WHERE received_webhook.received_at < {p}""")
_stamp = ReceivedWebhook.received_at.db_value
