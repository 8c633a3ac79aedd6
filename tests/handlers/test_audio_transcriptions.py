"""An audio file's transcription over HTTP, without the engine (the outcome stored as a worker
stores it): 404 before any is requested, queued and the same run answered while it is under
way, a succeeded one answered unless forced, force at its boundary, another workspace's file 404,
the transcript gone with its file, and the request audited. The engine's own run is in
tests/api/test_audio_transcription.py."""
from __future__ import annotations

import json
import uuid

import pytest

from models.audio import transcription
from models.kernel.db import session
from tests.support import factories
from tests.support.client import Api

FIELDS = {"audioId", "status", "text", "language", "durationSeconds", "words", "error", "createdAt", "finishedAt"}
WORDS = [{"word": "Ask", "start": 0.0, "end": 0.4, "confidence": 0.91}, {"word": "not.", "start": 0.4, "end": 0.9,
                                                                        "confidence": 0.88}]


@pytest.fixture
def api(platform):
    return Api(platform, platform.workspace())


def transcribe(api: Api, audio_id: str, expect: int = 200, **params) -> dict:
    """POST /audio/{audioId}/transcription: the transcription, or the error's data."""
    response = api.client.post(f"/api/v2/audio/{audio_id}/transcription", headers=api.actor.headers,
                               params={"workspaceId": api.actor.workspace_id, **params})
    assert response.status_code == expect, response.text
    body = response.json()
    assert body["success"] is (expect < 300), body
    return body["data"]["result"]["transcription"] if expect < 300 else body["data"]


def worker_finishes(text: str = "Ask not.") -> None:
    """What a transcription worker does with the oldest due job: claims it and stores its transcript."""
    with session():
        job = transcription.claim(60)
        assert transcription.complete(job, text=text, words=WORDS, language="english", duration_seconds=0.9)


def test_queued_once_answered_while_under_way_and_succeeded_answered_as_it_is(api):
    audio_id = factories.audio_file(api.actor)
    assert api("GET", f"/audio/{audio_id}/transcription", 404)["message"] == \
        f"No transcription of audio file {audio_id} in this workspace: request one first."
    queued = transcribe(api, audio_id)
    assert set(queued) == FIELDS
    assert (queued["audioId"], queued["status"], queued["text"], queued["words"], queued["finishedAt"]) == \
        (audio_id, "queued", None, None, None)
    assert transcribe(api, audio_id) == queued  # idempotent: the same run
    assert transcribe(api, audio_id, force="true") == queued  # force restarts nothing under way
    assert api("GET", f"/audio/{audio_id}/transcription")["transcription"] == queued
    worker_finishes()
    done = api("GET", f"/audio/{audio_id}/transcription")["transcription"]
    assert (done["status"], done["text"], done["language"], done["durationSeconds"], done["words"], done["error"]) == \
        ("succeeded", "Ask not.", "english", 0.9, WORDS, None)
    assert done["createdAt"] == queued["createdAt"] and done["finishedAt"] >= done["createdAt"]
    assert transcribe(api, audio_id, 200) == done  # succeeded: answered, not run again
    assert transcribe(api, audio_id, 200, force="false") == done


def test_force_runs_a_succeeded_one_again(api):
    audio_id = factories.audio_file(api.actor)
    transcribe(api, audio_id)
    worker_finishes()
    again = transcribe(api, audio_id, force="true")
    assert (again["status"], again["text"], again["words"], again["finishedAt"]) == ("queued", None, None, None)
    worker_finishes("Ask again.")
    assert api("GET", f"/audio/{audio_id}/transcription")["transcription"]["text"] == "Ask again."


@pytest.mark.parametrize("value", ["yes", "2", ""])
def test_force_must_be_a_boolean(api, value):
    audio_id = factories.audio_file(api.actor)
    assert "force" in transcribe(api, audio_id, 400, force=value)["message"]
    api("GET", f"/audio/{audio_id}/transcription", 404)  # nothing queued


def test_another_workspaces_file_and_an_unknown_one_are_404(api, platform):
    audio_id = factories.audio_file(api.actor)
    transcribe(api, audio_id)
    other = Api(platform, platform.workspace("other"))
    assert transcribe(other, audio_id, 404)["message"] == f"No audio file {audio_id} in this workspace."
    other("GET", f"/audio/{audio_id}/transcription", 404)
    unknown = str(uuid.uuid4())
    transcribe(api, unknown, 404)
    api("GET", f"/audio/{unknown}/transcription", 404)
    assert api("GET", f"/audio/{audio_id}/transcription")["transcription"]["status"] == "queued"  # untouched


def test_deleting_the_file_deletes_its_transcript(api):
    audio_id = factories.audio_file(api.actor)
    transcribe(api, audio_id)
    worker_finishes()
    api("DELETE", f"/audio/{audio_id}")
    api("GET", f"/audio/{audio_id}/transcription", 404)
    transcribe(api, audio_id, 404)
    with session():
        assert transcription.claim(60) is None


def test_a_request_is_audited(api):
    from models.audit.tables import AuditEntry
    audio_id = factories.audio_file(api.actor)
    transcribe(api, audio_id, force="true")
    with session():
        entries = list(AuditEntry.select().where(AuditEntry.workspace == api.actor.workspace_id).dicts())
    logged = [e for e in entries if e["operation_id"] == "requestAudioTranscription"]
    assert len(logged) == 1, json.dumps(entries, default=str)
    assert (logged[0]["resource_type"], logged[0]["resource_id"]) == ("audio", audio_id)
