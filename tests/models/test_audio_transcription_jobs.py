"""Audio files' transcriptions on demand (models.audio.transcription): a request while one is queued
or running queues no other, a succeeded one is answered unless forced, a failed one is queued again;
the job's lease, retries and release as a recording's; the transcript stored with the workspace's
vocabulary and filter; the row gone with its file; and the transcription workers taking both kinds
of job in turn (api.transcription_worker). A fixed clock (``now``) stands in for waiting out a lease."""
from __future__ import annotations

from datetime import timedelta

import pytest

from api.transcription_worker import AUDIO_FILES, RECORDINGS, TranscriptionWorkers
from core.settings import Settings
from models.audio import library, transcription
from models.audio.tables import AudioTranscription
from models.audio.transcription import MAX_ATTEMPTS
from models.calls import recordings
from models.kernel.db import session, utcnow
from models.kernel.errors import NotFound
from tests.support import factories
from tests.support.factories.identity import principal

LEASE_S = 60
WORDS = [{"word": w, "start": float(i), "end": i + 0.5, "confidence": 0.9}
         for i, w in enumerate(["Pay", "with", "acme", "pay", "on", "4111", "1111", "1111", "1111."])]


@pytest.fixture
def owner(db, tmp_path):
    library.configure(tmp_path)
    recordings.configure(tmp_path)
    return factories.workspace()


def request(actor, audio_id, force=False):
    with session():
        return transcription.request_transcription(principal(actor), workspace_id=actor.workspace_id,
                                                   audio_id=audio_id, force=force)


def read(actor, audio_id):
    with session():
        return transcription.get_transcription(workspace_id=actor.workspace_id, audio_id=audio_id)


def state(audio_id) -> tuple:
    with session():
        row = AudioTranscription.get_or_none(AudioTranscription.audio == audio_id)
    return (row.status, row.attempts) if row else None


def claim(at=None):
    with session():
        return transcription.claim(LEASE_S, now=at)


def complete(job, text="Pay with acme pay on 4111 1111 1111 1111.", words=WORDS):
    with session():
        return transcription.complete(job, text=text, words=words, language="english", duration_seconds=8.4999)


def test_a_request_queues_one_run_and_answers_it_while_queued_or_running(owner):
    audio_id = factories.audio_file(owner)
    with pytest.raises(NotFound, match="request one first"):
        read(owner, audio_id)
    first = request(owner, audio_id)
    assert first.queued and first.transcription.status == "queued"
    assert (first.transcription.text, first.transcription.words, first.transcription.finished_at) == (None, None, None)
    assert request(owner, audio_id) == first  # the same run, not a second one
    assert request(owner, audio_id, force=True) == first  # force does not restart one queued
    job = claim()
    assert (job.audio_id, job.workspace_id, job.attempt) == (audio_id, owner.workspace_id, 1)
    assert job.path.startswith(str(library._root)) and state(audio_id) == ("running", 1)
    assert request(owner, audio_id, force=True) == (first.transcription._replace(status="running"), True)
    assert claim() is None
    assert complete(job)
    done = read(owner, audio_id)
    assert (done.status, done.language, done.duration_seconds, done.error) == ("succeeded", "english", 8.5, None)
    assert done.text == "Pay with acme pay on 4111 1111 1111 1111." and done.words == WORDS
    assert done.finished_at >= done.created_at
    assert request(owner, audio_id) == (done, False)  # succeeded: answered as it is


def test_force_runs_a_succeeded_one_again_and_drops_the_outcome_of_the_run_it_replaced(owner):
    audio_id = factories.audio_file(owner)
    request(owner, audio_id)
    assert complete(claim())
    old = claim(utcnow() + timedelta(days=1))
    assert old is None  # succeeded is not due again by itself
    forced = request(owner, audio_id, force=True)
    assert forced.queued and forced.transcription.status == "queued" and forced.transcription.text is None
    assert state(audio_id) == ("queued", 0)
    first = claim()
    forced_again_meanwhile = claim(utcnow() + timedelta(seconds=LEASE_S + 1))  # the first worker died
    assert forced_again_meanwhile.attempt == 2
    assert not complete(first, text="stale")  # its lease was taken over: nothing stored
    assert complete(forced_again_meanwhile, text="fresh", words=[])
    assert read(owner, audio_id).text == "fresh"


def test_a_fault_of_the_machine_is_retried_a_bad_file_is_not_and_a_failed_one_is_queued_again(owner):
    audio_id = factories.audio_file(owner)
    request(owner, audio_id)
    for attempt in range(1, MAX_ATTEMPTS + 1):
        job = claim(utcnow() + timedelta(seconds=6 if attempt > 1 else 0))  # due again 5 s after failing
        assert job.attempt == attempt
        with session():
            status = transcription.fail(job, "Transcription failed (OSError).", retry=True, retry_in_s=5)
        if attempt < MAX_ATTEMPTS:
            assert status == "running" and read(owner, audio_id).status == "running"
            assert claim(utcnow() + timedelta(seconds=4)) is None  # not before retry_in_s
    failed = read(owner, audio_id)
    assert (failed.status, failed.error, failed.text) == ("failed", "Transcription failed (OSError).", None)
    assert failed.finished_at is not None and claim(utcnow() + timedelta(days=1)) is None
    again = request(owner, audio_id)  # failed: a new request queues it, no force needed
    assert again.queued and (again.transcription.status, again.transcription.error) == ("queued", None)
    with session():
        assert transcription.fail(claim(), "The audio file could not be transcribed: no audio.", retry=False) == \
            "failed"
    assert state(audio_id) == ("failed", 1)


def test_a_released_job_is_queued_again_without_an_attempt_spent(owner):
    audio_id = factories.audio_file(owner)
    request(owner, audio_id)
    job = claim()
    with session():
        assert transcription.release(job)
        assert transcription.renew(job, LEASE_S) is None  # no longer this worker's
    assert state(audio_id) == ("queued", 0)
    renewed = None
    with session():
        renewed = transcription.renew(claim(), LEASE_S * 2)
    assert renewed.attempt == 1
    assert claim(utcnow() + timedelta(seconds=LEASE_S + 1)) is None  # the renewed lease holds past the first


def test_the_transcript_is_stored_with_the_vocabulary_and_the_filters_masks(owner):
    factories.term(owner, "Acme Pay")
    factories.speech_filter(owner, enabled=True)
    audio_id = factories.audio_file(owner)
    request(owner, audio_id)
    assert complete(claim())
    done = read(owner, audio_id)
    assert done.text == "Pay with Acme Pay on [card]."
    assert [(w["word"], w["start"], w["end"]) for w in done.words] == [
        ("Pay", 0.0, 0.5), ("with", 1.0, 1.5), ("Acme Pay", 2.0, 3.5), ("on", 4.0, 4.5), ("[card].", 5.0, 8.5)]


def test_another_workspaces_file_is_not_found_and_a_deleted_file_takes_its_transcript(owner):
    audio_id = factories.audio_file(owner)
    other = factories.workspace()
    with pytest.raises(NotFound, match=f"No audio file {audio_id} in this workspace"):
        request(other, audio_id)
    request(owner, audio_id)
    with pytest.raises(NotFound):
        read(other, audio_id)
    job = claim()
    with session():
        library.delete_audio(workspace_id=owner.workspace_id, audio_id=audio_id)
        assert transcription.renew(job, LEASE_S) is None
    assert state(audio_id) is None and not complete(job)
    with pytest.raises(NotFound):
        read(owner, audio_id)


def test_the_transcription_workers_take_recordings_and_audio_files_in_turn(owner, tmp_path):
    audio_ids = [factories.audio_file(owner) for _ in range(2)]
    for audio_id in audio_ids:
        request(owner, audio_id)
    call_ids = []
    for _ in range(3):
        call_id = factories.call(owner)
        part = recordings.part_file(owner.workspace_id, call_id)
        part.write_bytes(b"RIFF")
        with session():
            recordings.attach(workspace_id=owner.workspace_id, call_id=call_id, path=recordings.finish_part(part),
                              content_type="audio/wav", size=4)
        call_ids.append(call_id)
    workers = TranscriptionWorkers(Settings(data_dir=str(tmp_path), transcription_workers=0,
                                            transcription_lease_s=LEASE_S))
    taken = []
    while True:
        with session():
            job = workers.claim()
        if job is None:
            break
        taken.append((job.kind, getattr(job.claimed, job.kind.key)))
    # Alternately while both kinds wait, then what is left of the one that has more.
    assert [kind for kind, _ in taken] == [RECORDINGS, AUDIO_FILES, RECORDINGS, AUDIO_FILES, RECORDINGS]
    assert [key for kind, key in taken if kind is AUDIO_FILES] == audio_ids
    assert [key for kind, key in taken if kind is RECORDINGS] == call_ids
