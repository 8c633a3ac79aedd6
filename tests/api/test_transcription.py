"""Uploaded recordings transcribed in the background by the project's own engine: the transcript
with word timings on the call, a file the engine cannot read, and a server killed mid-job whose
job a restarted server finishes (models.calls.transcription, api.transcription_worker)."""
from __future__ import annotations

import os
import signal
import sqlite3
import time
import uuid

import httpx
import pytest

from stt.scoring import wer
from tests.support import factories
from tests.support.client import Api
from tests.support.servers import start_server, stop_server
from tests.support.uploads import WAV, long_recording, upload

JFK = "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country."
# Generous: a loaded 2-core machine transcribes 11 s of speech in a few seconds, after loading the model.
WAIT_S = 180


@pytest.fixture
def settings_overrides(converted_model):
    return {"transcription_workers": 1, "stt_model_path": str(converted_model), "transcription_lease_s": 5}


def transcription_of(get_call, call_id: str, until: set[str], seconds: float = WAIT_S) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        transcription = get_call(call_id)["transcription"]
        if transcription["status"] in until:
            return transcription
        time.sleep(0.05)
    raise AssertionError(f"the transcription of {call_id} stayed {transcription['status']} for {seconds:g} s")


def test_an_upload_answers_at_once_and_its_transcript_with_word_timings_follows(platform):
    api = Api(platform, platform.workspace())
    call_id = factories.call(api.actor)
    assert upload(api, call_id, WAV)["transcriptionStatus"] == "pending"
    transcription = transcription_of(lambda c: api("GET", f"/call/{c}")["call"], call_id, {"done", "failed"})
    assert transcription["status"] == "done", transcription["error"]
    assert transcription["error"] is None and transcription["language"] == "english"
    assert wer(JFK, transcription["text"]) < 0.15, transcription["text"]
    words = transcription["words"]
    assert " ".join(w["word"] for w in words).split() == transcription["text"].split()
    starts = [w["start"] for w in words]
    assert starts == sorted(starts) and all(0 <= w["start"] <= w["end"] <= 11.1 for w in words)
    assert all(0 <= w["confidence"] <= 1 for w in words)
    country = [w for w in words if w["word"].strip(",.").lower() == "country"]
    assert len(country) == 2 and 5 < country[0]["start"] < country[1]["start"] < 11  # said twice, in order
    assert transcription["completedAt"]
    listed = api("GET", "/call")["calls"]
    assert [c["transcriptionStatus"] for c in listed if c["id"] == call_id] == ["done"]


def test_a_file_the_engine_cannot_read_fails_with_the_reason_and_is_not_retried(platform):
    api = Api(platform, platform.workspace())
    call_id = factories.call(api.actor)
    upload(api, call_id, b"RIFF\x00\x00\x00\x00WAVE" + os.urandom(2000))
    transcription = transcription_of(lambda c: api("GET", f"/call/{c}")["call"], call_id, {"done", "failed"})
    assert transcription["status"] == "failed" and transcription["text"] is None
    assert transcription["error"].startswith("The recording could not be transcribed: ")
    from models.calls.tables import TranscriptionJob
    from models.kernel.db import session
    with session():
        assert TranscriptionJob.get_by_id(call_id).attempts == 1


def test_a_server_killed_mid_job_loses_no_job(tmp_path, converted_model):
    env = {"RATE_LIMITS_ENABLED": "false", "TRANSCRIPTION_WORKERS": "1", "TRANSCRIPTION_LEASE_S": "3",
           "STT_MODEL_PATH": str(converted_model)}
    server = start_server(tmp_path, **env)
    try:
        owner = server.admin("bootstrap", "--workspace", "w", "--email", "owner@example.com")
        headers = {"Authorization": f"Bearer {owner['token']}"}
        params = {"workspaceId": owner["workspaceId"]}
        report = factories.report(factories.Actor(owner["workspaceId"], owner["userId"], "", ""),
                                  callId=str(uuid.uuid4()))
        with httpx.Client(base_url=server.url + "/api/v2", headers=headers, params=params, timeout=30) as client:
            assert client.post("/webhooks/end-of-call-report", json=report).status_code == 200
            call_id = report["callId"]
            audio = long_recording(8)  # 88 s of speech: three pieces of about 30 s
            r = client.put(f"/call/{call_id}/recording", content=audio, headers={"Content-Type": "audio/wav"})
            assert r.status_code == 200, r.text

            def get_call(c):
                return client.get(f"/call/{c}").json()["data"]["result"]["call"]
            assert transcription_of(get_call, call_id, {"running", "done"})["status"] == "running"
            time.sleep(0.5)  # into the first piece
            server.process.send_signal(signal.SIGKILL)
            server.process.wait(timeout=10)
    finally:
        stop_server(server)
    restarted = start_server(tmp_path, **env)  # the same DATA_DIR: its database and its recordings
    try:
        with httpx.Client(base_url=restarted.url + "/api/v2", headers=headers, params=params, timeout=30) as client:
            transcription = transcription_of(
                lambda c: client.get(f"/call/{c}").json()["data"]["result"]["call"], call_id, {"done", "failed"})
        assert transcription["status"] == "done", transcription["error"]
        assert transcription["text"].lower().count("ask not what your country") >= 6, transcription["text"]
        assert transcription["words"][-1]["end"] > 80  # times run across the pieces
    finally:
        stop_server(restarted)
    with sqlite3.connect(tmp_path / "data" / "service.sqlite3") as db:
        # Taken a second time: by the restarted server, once the killed one's lease had run out.
        assert db.execute("SELECT status, attempts FROM transcription_job").fetchall() == [("done", 2)]


def test_a_server_stopped_mid_job_puts_the_job_back_without_spending_an_attempt(tmp_path, converted_model):
    server = start_server(tmp_path, RATE_LIMITS_ENABLED="false", TRANSCRIPTION_WORKERS="1",
                          STT_MODEL_PATH=str(converted_model))
    try:
        owner = server.admin("bootstrap", "--workspace", "w", "--email", "owner@example.com")
        report = factories.report(factories.Actor(owner["workspaceId"], owner["userId"], "", ""))
        with httpx.Client(base_url=server.url + "/api/v2", params={"workspaceId": owner["workspaceId"]},
                          headers={"Authorization": f"Bearer {owner['token']}"}, timeout=30) as client:
            assert client.post("/webhooks/end-of-call-report", json=report).status_code == 200
            r = client.put(f"/call/{report['callId']}/recording", content=long_recording(12),
                           headers={"Content-Type": "audio/wav"})
            assert r.status_code == 200, r.text
            transcription_of(lambda c: client.get(f"/call/{c}").json()["data"]["result"]["call"],
                             report["callId"], {"running"})
    finally:
        stop_server(server)  # SIGTERM: the thread stops after the piece under way
    assert server.process.returncode == 0
    with sqlite3.connect(tmp_path / "data" / "service.sqlite3") as db:
        assert db.execute("SELECT status, attempts, lease_until FROM transcription_job").fetchall() == [
            ("pending", 0, None)]
        assert db.execute("SELECT transcription_status FROM call").fetchall() == [("pending",)]
