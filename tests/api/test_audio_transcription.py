"""An audio library file transcribed on demand by the project's own engine, in the transcription
workers that transcribe call recordings (models.audio.transcription, api.transcription_worker): the
transcript with the workspace's vocabulary and speech filter, and a server stopped mid-job that puts
the job back for the next one. One whole transcription of the JFK clip, and part of a long one."""
from __future__ import annotations

import sqlite3
import time

import httpx
import pytest

from tests.support import factories
from tests.support.client import Api
from tests.support.servers import start_server, stop_server
from tests.support.uploads import long_recording

# Generous: a loaded 2-core machine transcribes 11 s of speech in a few seconds, after loading the model.
WAIT_S = 180


@pytest.fixture
def settings_overrides(converted_model):
    return {"transcription_workers": 1, "stt_model_path": str(converted_model), "transcription_lease_s": 5}


def transcription_of(read, until: set[str], seconds: float = WAIT_S) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        transcription = read()
        if transcription["status"] in until:
            return transcription
        time.sleep(0.05)
    raise AssertionError(f"the transcription stayed {transcription['status']} for {seconds:g} s")


def test_the_transcript_has_the_known_words_the_vocabulary_and_the_filters_masks(platform):
    api = Api(platform, platform.workspace())
    factories.term(api.actor, "Fellow-Citizens", ["fellow americans"])
    factories.speech_filter(api.actor, enabled=True, words=["country"])
    audio_id = factories.audio_file(api.actor)
    path = f"/api/v2/audio/{audio_id}/transcription"
    params = {"workspaceId": api.actor.workspace_id}
    queued = platform.client.post(path, params=params, headers=api.actor.headers)
    assert queued.status_code == 200, queued.text

    def read():
        return api("GET", f"/audio/{audio_id}/transcription")["transcription"]
    done = transcription_of(read, {"succeeded", "failed"})
    assert done["status"] == "succeeded", done["error"]
    text = done["text"]
    for known in ("ask not what your", "can do for you", "ask what you can do for your"):
        assert known in text.lower(), text
    assert "Fellow-Citizens" in text and "americans" not in text.lower(), text  # the written form, as stored
    assert "country" not in text.lower() and text.count("****") == 2, text  # masked, said twice
    assert (done["language"], done["error"]) == ("english", None) and 10.9 <= done["durationSeconds"] <= 11.1
    words = done["words"]
    assert " ".join(w["word"] for w in words).split() == text.split()
    assert any(w["word"].startswith("Fellow-Citizens") for w in words)
    starts = [w["start"] for w in words]
    assert starts == sorted(starts) and all(0 <= w["start"] <= w["end"] <= 11.1 for w in words)
    assert done["finishedAt"] >= done["createdAt"]
    again = platform.client.post(path, params=params, headers=api.actor.headers)  # answered, not run again
    assert again.status_code == 200 and again.json()["data"]["result"]["transcription"] == done


def test_a_server_stopped_mid_job_puts_the_job_back_without_spending_an_attempt(tmp_path, converted_model):
    server = start_server(tmp_path, RATE_LIMITS_ENABLED="false", TRANSCRIPTION_WORKERS="1",
                          STT_MODEL_PATH=str(converted_model))
    try:
        owner = server.admin("bootstrap", "--workspace", "w", "--email", "owner@example.com")
        with httpx.Client(base_url=server.url + "/api/v2", params={"workspaceId": owner["workspaceId"]},
                          headers={"Authorization": f"Bearer {owner['token']}"}, timeout=30) as client:
            uploaded = client.post("/audio", params={"name": "Long", "kind": "other"}, content=long_recording(12),
                                   headers={"Content-Type": "audio/wav"})
            assert uploaded.status_code == 200, uploaded.text
            audio_id = uploaded.json()["data"]["result"]["audio"]["id"]
            assert client.post(f"/audio/{audio_id}/transcription").status_code == 200
            transcription_of(lambda: client.get(f"/audio/{audio_id}/transcription").json()["data"]["result"][
                "transcription"], {"running"})
    finally:
        stop_server(server)  # SIGTERM: the thread stops after the piece under way
    assert server.process.returncode == 0
    with sqlite3.connect(tmp_path / "data" / "service.sqlite3") as db:
        assert db.execute("SELECT audio_id, status, attempts, lease_until, text FROM audio_transcription").fetchall() \
            == [(audio_id, "queued", 0, None, None)]
