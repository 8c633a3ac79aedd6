"""The credits ledger: started minutes and seconds, one debit per call, and a balance that stays
the ledger's exact sum under concurrent debits from several processes (on PostgreSQL with
TEST_DATABASE_URL, as on SQLite)."""
from __future__ import annotations

from datetime import timedelta

import pytest

from models.billing import credits
from models.kernel.db import open_database, session, utcnow
from tests.support import factories
from tests.support.threads import run_processes, run_threads


@pytest.mark.parametrize("duration_ms, minutes", [(0, 0), (1, 1), (59_999, 1), (60_000, 1), (60_001, 2),
                                                  (3_600_000, 60), (3_600_001, 61)])
def test_a_call_is_charged_per_started_minute(duration_ms, minutes):
    assert credits.call_minutes(duration_ms) == minutes


def test_a_call_is_debited_once_however_often_its_report_comes(db):
    from models.call_recorded import record
    from models.calls.calls import Report, delete_call
    owner = factories.workspace()
    started = utcnow() - timedelta(minutes=5)
    report = Report(call_id="7e1f2a3b-4c5d-4e6f-8a7b-9c0d1e2f3a4b", workspace_id=owner.workspace_id, started_at=started,
                    ended_at=started + timedelta(seconds=61), duration_ms=61_000, agent_id=None, call_type="inbound",
                    status="completed", call_end_reason_category="customer", ended_reason=None, customer=None,
                    recording_url=None, summary=None, transcript=None, sent_at=None, structured_data={}, tags=[], raw={})
    with session():
        record(report)
        record(report)  # a redelivery
        entries = credits.list_entries(workspace_id=owner.workspace_id, limit=10, offset=0).items
        assert [(e.kind, e.amount, e.quantity, e.unit, e.reference) for e in entries] == [
            ("call", -2, 2, "minutes", f"call:{report.call_id}")]
        assert credits.balance(owner.workspace_id) == -2
        # Deleted, then reported again: the call is recorded anew, but it was paid for.
        delete_call(workspace_id=owner.workspace_id, call_id=report.call_id)
        assert record(report)
        assert credits.ledger_sum(owner.workspace_id) == credits.balance(owner.workspace_id) == -2


def test_the_ledger_filters_by_kind_and_time(db):
    owner = factories.workspace()
    with session():
        credits.grant(workspace_id=owner.workspace_id, credits=100, description=None, created_by=owner.user_id)
        credits.debit_transcription(workspace_id=owner.workspace_id, seconds=2.2, what="file", credential_id="k")
        credits.debit_transcription(workspace_id=owner.workspace_id, seconds=0.0, what="file", credential_id="k")
        everything = credits.list_entries(workspace_id=owner.workspace_id, limit=10, offset=0)
        assert [(e.kind, e.amount) for e in everything.items] == [("transcription", -3), ("grant", 100)]
        grants = credits.list_entries(workspace_id=owner.workspace_id, limit=10, offset=0, kind="grant")
        assert [e.amount for e in grants.items] == [100] and grants.total == 1
        later = credits.list_entries(workspace_id=owner.workspace_id, limit=10, offset=0,
                                     since=utcnow() + timedelta(seconds=1))
        assert later.items == [] and later.total == 0
        first = everything.items[-1].created_at
        assert credits.list_entries(workspace_id=owner.workspace_id, limit=10, offset=0, until=first).total == 0
        assert credits.list_entries(workspace_id=owner.workspace_id, limit=10, offset=0, since=first).total == 2


def _process_debits(url: str, data_dir: str, threads: int, args: tuple, start, results) -> None:
    """A worker process: ``threads`` threads, each debiting and granting ``rounds`` times."""
    try:
        open_database(url, data_dir, pool_size=threads + 1)
        workspace_id, rounds = args

        def work(t: int) -> int:
            with session():
                for i in range(rounds):
                    credits.debit_transcription(workspace_id=workspace_id, seconds=1.5, what="file", credential_id="k")
                    if i % 5 == 0:
                        credits.grant(workspace_id=workspace_id, credits=7, description=None, created_by="u")
            return rounds

        start.wait(timeout=60)
        results.put(("ok", sum(run_threads(threads, work))))
    except BaseException as exc:
        results.put(("error", repr(exc)))


def test_the_balance_stays_the_exact_sum_under_concurrent_debits_from_processes(db, tmp_path):
    processes, threads, rounds = 3, 3, 20
    owner = factories.workspace()
    done = run_processes(_process_debits, db, str(tmp_path), processes, threads, lambda p: (owner.workspace_id, rounds))
    assert sum(done) == processes * threads * rounds
    writers = processes * threads
    expected = writers * (rounds * -2 + (rounds // 5) * 7)
    with session():
        assert credits.balance(owner.workspace_id) == credits.ledger_sum(owner.workspace_id) == expected
        total = credits.list_entries(workspace_id=owner.workspace_id, limit=1, offset=0).total
        assert total == writers * (rounds + rounds // 5)
