"""Transcription jobs (models.calls.transcription): the lease that lets another worker take a job whose
process died, retries, and concurrent claimers that never share a job. A fixed clock (``now``)
stands in for waiting out a lease."""
from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from models.calls import recordings, transcription
from models.calls.tables import Call, TranscriptionJob
from models.calls.transcription import MAX_ATTEMPTS
from models.kernel.db import session, utcnow
from tests.support import factories
from tests.support.threads import run_threads

LEASE_S = 60


@pytest.fixture
def owner(db, tmp_path):
    recordings.configure(tmp_path)
    return factories.workspace()


def uploaded(owner, tmp_path: Path) -> str:
    """A call with a recording attached (its job pending); the call's id."""
    call_id = factories.call(owner)
    part = recordings.part_file(owner.workspace_id, call_id)
    part.write_bytes(b"RIFF")
    with session():
        recordings.attach(workspace_id=owner.workspace_id, call_id=call_id, path=recordings.finish_part(part),
                          content_type="audio/wav", size=4)
    return call_id


def state(call_id: str) -> tuple:
    with session():
        job = TranscriptionJob.get_or_none(TranscriptionJob.call == call_id)
        call = Call.get_by_id(call_id)
    return (job.status if job else None, job.attempts if job else None, call.transcription_status)


def claim(at=None):
    with session():
        return transcription.claim(LEASE_S, now=at)


def test_a_leased_job_is_not_taken_again_until_its_lease_has_run_out(owner, tmp_path):
    call_id = uploaded(owner, tmp_path)
    assert state(call_id) == ("pending", 0, "pending")
    first = claim()
    assert first.call_id == call_id and first.attempt == 1 and first.path.endswith(call_id + "." + first.path[-12:])
    assert state(call_id) == ("running", 1, "running")
    assert claim() is None
    assert claim(utcnow() + timedelta(seconds=LEASE_S - 2)) is None  # just before the lease's end
    second = claim(utcnow() + timedelta(seconds=LEASE_S + 1))  # just past it: the worker died
    assert second.call_id == call_id and second.attempt == 2
    with session():
        # The first worker, come back, can neither renew nor store its outcome.
        assert transcription.renew(first, LEASE_S) is None
        assert transcription.complete(first, text="stale", words=[], language="english") is False
        assert transcription.complete(second, text="fresh", words=[{"word": "fresh", "start": 0.0, "end": 0.5}],
                                      language="english") is True
        call = Call.get_by_id(call_id)
    assert state(call_id) == ("done", 2, "done") and call.transcription_text == "fresh"
    assert claim(utcnow() + timedelta(days=1)) is None  # done is done


def test_a_renewed_lease_holds_past_the_first_one(owner, tmp_path):
    uploaded(owner, tmp_path)
    job = claim()
    with session():
        renewed = transcription.renew(job, LEASE_S * 2)
    assert renewed is not None and renewed.lease_token > job.lease_token
    assert claim(utcnow() + timedelta(seconds=LEASE_S + 1)) is None
    with session():
        assert transcription.complete(renewed, text="ok", words=[], language="english")


def test_a_fault_of_the_machine_is_retried_until_the_last_attempt_and_a_bad_file_is_not(owner, tmp_path):
    call_id = uploaded(owner, tmp_path)
    for attempt in range(1, MAX_ATTEMPTS + 1):
        job = claim(utcnow() + timedelta(seconds=6 if attempt > 1 else 0))  # due again 5 s after failing
        assert job.attempt == attempt
        with session():
            status = transcription.fail(job, "Transcription failed (OSError).", retry=True, retry_in_s=5)
        if attempt < MAX_ATTEMPTS:
            assert status == "running" and state(call_id) == ("running", attempt, "pending")
            assert claim(utcnow() + timedelta(seconds=4)) is None  # not before retry_in_s
    assert state(call_id) == ("failed", MAX_ATTEMPTS, "failed")
    assert claim(utcnow() + timedelta(days=1)) is None
    bad = uploaded(owner, tmp_path)
    with session():
        assert transcription.fail(claim(), "The recording could not be transcribed: no audio.", retry=False) == "failed"
        assert Call.get_by_id(bad).transcription_error == "The recording could not be transcribed: no audio."
    assert state(bad) == ("failed", 1, "failed")


def test_a_released_job_is_pending_again_without_an_attempt_spent(owner, tmp_path):
    call_id = uploaded(owner, tmp_path)
    with session():
        assert transcription.release(claim())
    assert state(call_id) == ("pending", 0, "pending")
    assert claim().attempt == 1


def test_a_new_upload_during_a_job_starts_a_new_job_and_the_old_outcome_is_dropped(owner, tmp_path):
    call_id = uploaded(owner, tmp_path)
    old = claim()
    part = recordings.part_file(owner.workspace_id, call_id)
    part.write_bytes(b"RIFF2")
    with session():
        recordings.attach(workspace_id=owner.workspace_id, call_id=call_id, path=recordings.finish_part(part),
                          content_type="audio/wav", size=5)
        assert transcription.complete(old, text="of the old file", words=[], language="english") is False
    assert state(call_id) == ("pending", 0, "pending")
    assert not Path(old.path).exists()  # the replaced file is gone
    assert claim().path != old.path


def test_concurrent_claimers_never_take_the_same_job(owner, tmp_path):
    calls = {uploaded(owner, tmp_path) for _ in range(24)}

    def worker(_index: int) -> list[str]:
        taken = []
        while (job := claim()) is not None:
            taken.append(job.call_id)
        return taken

    taken = [call_id for result in run_threads(6, worker) for call_id in result]
    assert sorted(taken) == sorted(calls)  # each exactly once


def test_concurrent_uploads_and_a_delete_leave_no_file_that_no_call_names(owner, tmp_path):
    for round_ in range(3):
        call_id = uploaded(owner, tmp_path)

        def upload_or_delete(index: int) -> None:
            from models.calls.calls import delete_call
            from models.kernel.errors import NotFound
            with session():
                try:
                    if index == 5 and round_ > 0:
                        delete_call(workspace_id=owner.workspace_id, call_id=call_id)
                        return
                    part = recordings.part_file(owner.workspace_id, call_id)
                    part.write_bytes(b"RIFF" + bytes([index]))
                    recordings.attach(workspace_id=owner.workspace_id, call_id=call_id,
                                      path=recordings.finish_part(part), content_type="audio/wav", size=5)
                except NotFound:  # deleted first: the upload's file went with it
                    pass

        run_threads(6, upload_or_delete)
        with session():
            named = {p for (p,) in Call.select(Call.recording_path).tuples() if p}
        files = {str(p) for p in (tmp_path / "recordings").rglob("*") if p.is_file()}
        assert files == named, round_
