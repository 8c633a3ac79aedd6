"""The webhook-ids of the signed reports taken in, so that a replay of one is known.

A signed end-of-call-report verifies while its timestamp is within five minutes of the server's
clock either way (models.webhooks.signing_secrets), so a copy of one, sent again unchanged, would
verify for up to ten minutes after the first arrived. Each webhook-id is remembered per workspace
for REMEMBER_S, longer than that, in the transaction that acts on the report: a report refused on
the way (400, 409) leaves no id behind, and its sender's retry is taken. The insert on the key is
the arbiter: of two copies arriving at once, the second waits on the first's uncommitted row and
then finds it (PostgreSQL), or runs after it (SQLite's one writer). A row older than REMEMBER_S
counts as gone; each report deletes a few of its workspace's, so the table holds about
REMEMBER_S of reports.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from models.kernel.db import database, is_postgres, utcnow
from models.kernel.sql import Statement
from models.webhooks.signing_secrets import TOLERANCE_S
from models.webhooks.tables import ReceivedWebhook

# A signature verifies for 2 * TOLERANCE_S at most after its first arrival; then a margin.
REMEMBER_S = 2 * TOLERANCE_S + 5 * 60
# Rows deleted per report at most: a burst's leftovers go over the next reports.
_PRUNE_BATCH = 100


def first_receipt(*, workspace_id: str, webhook_id: str, now: datetime | None = None) -> bool:
    """True if the workspace has not taken in ``webhook_id`` within REMEMBER_S, and remembers it
    from now on, with the caller's transaction; False for a replay."""
    now = now or utcnow()
    forgotten = _stamp(now - timedelta(seconds=REMEMBER_S))
    with database.atomic():
        _PRUNE[is_postgres()].execute(workspace_id, workspace_id, forgotten)
        return _REMEMBER.execute(workspace_id, webhook_id, _stamp(now), forgotten).rowcount == 1


_REMEMBER = Statement("""
    INSERT INTO received_webhook (workspace_id, webhook_id, received_at) VALUES ({p}, {p}, {p})
    ON CONFLICT (workspace_id, webhook_id) DO UPDATE SET received_at = excluded.received_at
    WHERE received_webhook.received_at < {p}""")
# PostgreSQL skips rows another report is deleting rather than wait for them, and takes the
# batch once (ARRAY(...)): an IN (subquery) with a lock may be run again for each row it tests.
_OLD = f"SELECT webhook_id FROM received_webhook WHERE workspace_id = {{p}} AND received_at < {{p}} LIMIT {_PRUNE_BATCH}"
_PRUNE = {
    True: Statement("DELETE FROM received_webhook WHERE workspace_id = {p} AND webhook_id = ANY(ARRAY("
                    + _OLD + " FOR UPDATE SKIP LOCKED))"),
    False: Statement("DELETE FROM received_webhook WHERE workspace_id = {p} AND webhook_id IN (" + _OLD + ")"),
}
_stamp = ReceivedWebhook.received_at.db_value
