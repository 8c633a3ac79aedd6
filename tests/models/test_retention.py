"""Retention with a fixed clock: calls started before the cutoff go, with their recordings and
transcripts; the cutoff itself stays; a workspace without retention keeps everything."""
from __future__ import annotations

from datetime import timedelta

from models.audit import audit_log
from models.calls import retention
from models.calls.tables import Call
from models.kernel.db import session, utcnow
from models.kernel.scoping import Workspace
from tests.support import factories

NOW = utcnow().replace(microsecond=0)


def _calls(workspace_id):
    with session():
        return sorted(c.id for c in Call.select().where(Call.workspace == workspace_id))


def _scene(tmp_path):
    owner = factories.workspace()
    keeper = factories.workspace("keeps everything")
    with session():
        Workspace.update(data_retention_days=30).where(Workspace.id == owner.workspace_id).execute()
    old = factories.call(owner, started_at=NOW - timedelta(days=30, seconds=1))
    at_cutoff = factories.call(owner, started_at=NOW - timedelta(days=30))
    recent = factories.call(owner, started_at=NOW - timedelta(days=29))
    kept_elsewhere = factories.call(keeper, started_at=NOW - timedelta(days=400))
    recording = tmp_path / "old.wav"
    recording.write_bytes(b"RIFF")
    with session():
        Call.update(recording_path=str(recording), transcription_text="hello").where(Call.id == old).execute()
    return owner, keeper, old, at_cutoff, recent, kept_elsewhere, recording


def test_the_periodic_purge_deletes_what_is_past_retention_and_audits_it(db, tmp_path):
    owner, keeper, old, at_cutoff, recent, kept_elsewhere, recording = _scene(tmp_path)
    with session():
        done = retention.purge_due(now=NOW)
    assert {k: v._asdict() for k, v in done.items()} == {
        owner.workspace_id: {"calls": 1, "recordings": 1, "transcripts": 1}}
    assert _calls(owner.workspace_id) == sorted([at_cutoff, recent])
    assert _calls(keeper.workspace_id) == [kept_elsewhere]
    assert not recording.exists()
    with session():
        # Under the resource type of purgeRetention's entries: one filter finds both kinds of purge.
        entries = audit_log.list_entries(workspace_id=owner.workspace_id, limit=10, offset=0, resource_type="calls").items
        assert [(e.operation_id, e.actor_kind, e.changes["deleted"]["calls"]) for e in entries] == [
            ("scheduledRetentionPurge", "system", 1)]
        # Nothing left to delete: no second entry.
        assert retention.purge_due(now=NOW) == {}
        assert audit_log.list_entries(workspace_id=owner.workspace_id, limit=10, offset=0).total == 1
        # A second later, the call at the cutoff is past it.
        assert retention.purge_due(now=NOW + timedelta(seconds=1))[owner.workspace_id].calls == 1


def test_a_dry_run_counts_and_deletes_nothing(db, tmp_path):
    owner, _, old, at_cutoff, recent, _, recording = _scene(tmp_path)
    with session():
        outcome = retention.purge(workspace_id=owner.workspace_id, now=NOW, dry_run=True)
    assert outcome.deleted._asdict() == {"calls": 1, "recordings": 1, "transcripts": 1}
    assert outcome.cutoff == NOW - timedelta(days=30)
    assert len(_calls(owner.workspace_id)) == 3 and recording.exists()
    with session():
        wider = retention.purge(workspace_id=owner.workspace_id, now=NOW, older_than_days=1, dry_run=True)
    assert wider.deleted.calls == 3


def test_a_purge_in_batches_keeps_the_call_count(db, tmp_path):
    from peewee import fn

    from models.calls.calls import purge_started_before
    from models.calls.tables import CallCount
    owner = factories.workspace()
    ids = [factories.call(owner, started_at=NOW - timedelta(days=10, minutes=i)) for i in range(7)]
    factories.call(owner, started_at=NOW)
    with session():
        purged = purge_started_before(workspace_id=owner.workspace_id, cutoff=NOW - timedelta(days=5), batch=3)
        assert purged.calls == 7
        counted = CallCount.select(fn.SUM(CallCount.calls)).where(CallCount.workspace == owner.workspace_id).scalar()
    assert counted == 1 and not set(ids) & set(_calls(owner.workspace_id))
