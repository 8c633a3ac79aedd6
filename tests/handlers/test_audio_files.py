"""The workspace audio library over HTTP: each fixture format uploaded and read by PyAV (duration,
rate, channels, format), listed by kind, renamed, downloaded whole and by Range, deleted with its
file; the size limit at its boundary; truncated and foreign files refused with nothing kept;
another workspace's files are 404."""
from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.support import factories
from tests.support.client import Api
from tests.support.speech import FIXTURES

WAV = (FIXTURES / "jfk.wav").read_bytes()
FIELDS = {"id", "workspaceId", "name", "kind", "contentType", "bytes", "format", "durationSeconds", "sampleRate",
          "channels", "createdBy", "createdAt", "updatedAt"}


def upload(api: Api, body, content_type: str = "audio/wav", expect: int = 200, name: str = "Main greeting",
           kind: str = "greeting"):
    response = api.client.post("/api/v2/audio", content=body,
                               params={"workspaceId": api.actor.workspace_id, "name": name, "kind": kind},
                               headers={**api.actor.headers, "Content-Type": content_type})
    assert response.status_code == expect, response.text
    return response.json()["data"]["result"]["audio"] if expect == 200 else response.json()["data"]


def download(api: Api, audio_id: str, expect: int = 200, **headers):
    response = api.client.get(f"/api/v2/audio/{audio_id}/content", params={"workspaceId": api.actor.workspace_id},
                              headers={**api.actor.headers, **headers})
    assert response.status_code == expect, response.text
    return response


def audio_files(platform_dir: Path) -> list[Path]:
    return sorted(p for p in (platform_dir / "audio").rglob("*") if p.is_file())


@pytest.fixture
def api(platform):
    return Api(platform, platform.workspace())


@pytest.mark.parametrize("fixture, content_type, fmt, rate", [
    ("jfk.wav", "audio/wav", "wav", 16000), ("jfk.mp3", "audio/mpeg", "mp3", 44100),
    ("jfk.flac", "audio/flac", "flac", 16000), ("jfk.ogg", "audio/ogg", "ogg", 48000),
    ("jfk.m4a", "audio/mp4", "m4a", 44100), ("jfk.webm", "audio/webm", "webm", 48000)])
def test_each_format_is_stored_with_what_pyav_reads_of_it(api, tmp_path, fixture, content_type, fmt, rate):
    audio = (FIXTURES / fixture).read_bytes()
    made = upload(api, audio, "application/octet-stream")  # the format read from its first bytes
    assert set(made) == FIELDS
    assert (made["contentType"], made["format"], made["sampleRate"], made["channels"], made["bytes"]) == \
        (content_type, fmt, rate, 1, len(audio))
    assert 10.9 <= made["durationSeconds"] <= 11.1
    assert (made["name"], made["kind"], made["createdBy"]) == ("Main greeting", "greeting", api.actor.user_id)
    assert api("GET", f"/audio/{made['id']}")["audio"] == made
    response = download(api, made["id"])
    assert response.content == audio and response.headers["content-type"] == content_type
    assert [p.name.count(".") for p in audio_files(tmp_path)] == [0]  # one file, no .part left


def test_listed_by_kind_renamed_and_deleted_with_its_file(api, tmp_path):
    greeting = upload(api, WAV)
    hold = upload(api, WAV, name="Jazz", kind="hold-music")
    page = api("GET", "/audio")
    assert [a["id"] for a in page["audio"]] == [hold["id"], greeting["id"]]
    assert page["pagination"] == {"total": 2, "limit": 20, "offset": 0}
    assert api("GET", "/audio", kind="hold-music") == \
        {"audio": [hold], "pagination": {"total": 1, "limit": 20, "offset": 0}}
    assert api("GET", "/audio", kind="voicemail-drop")["pagination"]["total"] == 0
    changed = api("PATCH", f"/audio/{greeting['id']}", json={"name": "  Night greeting ", "kind": "other"})["audio"]
    assert (changed["name"], changed["kind"], changed["bytes"]) == ("Night greeting", "other", len(WAV))
    assert api("PATCH", f"/audio/{greeting['id']}", 400, json={"name": "x" * 201})
    assert len(audio_files(tmp_path)) == 2
    assert api("DELETE", f"/audio/{greeting['id']}") == {"id": greeting["id"], "deleted": True}
    assert len(audio_files(tmp_path)) == 1
    for method, path in (("GET", ""), ("DELETE", "")):
        assert api(method, f"/audio/{greeting['id']}{path}", 404)["message"] == \
            f"No audio file {greeting['id']} in this workspace."
    download(api, greeting["id"], 404)


@pytest.mark.parametrize("name, kind, status", [
    ("x" * 200, "greeting", 200), ("x" * 201, "greeting", 400), ("", "greeting", 400), ("   ", "greeting", 400),
    ("Jingle", "ringtone", 400)])
def test_name_and_kind_at_their_bounds(api, tmp_path, name, kind, status):
    upload(api, WAV, name=name, kind=kind, expect=status)
    assert len(audio_files(tmp_path)) == (1 if status == 200 else 0)


@pytest.mark.parametrize("settings_overrides", [{"max_recording_bytes": 4000}])
def test_the_size_limit_holds_at_its_boundary(api, tmp_path, settings_overrides):
    assert upload(api, WAV[:4000])["bytes"] == 4000
    assert "4000 bytes" in upload(api, WAV[:4001], expect=413)["message"]
    assert len(audio_files(tmp_path)) == 1


@pytest.mark.parametrize("body, content_type", [
    (b"\x00" * 4096, "application/octet-stream"), (b"not audio at all" * 100, "audio/wav"),
    (WAV[:44], "audio/wav"),  # a WAV header and no sample
    ((FIXTURES / "jfk.m4a").read_bytes()[:2000], "audio/mp4"),  # cut before its index
    ((FIXTURES / "jfk.flac").read_bytes()[:30], "audio/flac")])
def test_a_truncated_or_foreign_file_is_refused_and_nothing_kept(api, tmp_path, body, content_type):
    message = upload(api, body, content_type, expect=400)["message"]
    assert "decode" in message or "no audio" in message, message
    assert audio_files(tmp_path) == []
    assert api("GET", "/audio")["pagination"]["total"] == 0


def test_an_empty_body_is_400_and_another_type_415(api, tmp_path):
    assert "empty" in upload(api, b"", expect=400)["message"]
    assert "audio/*" in upload(api, WAV, "text/plain", expect=415)["message"]
    assert audio_files(tmp_path) == []


@pytest.mark.parametrize("range_header, expected", [
    ("bytes=0-99", slice(0, 100)), ("bytes=-500", slice(-500, None)), ("bytes=100-", slice(100, None))])
def test_a_range_gets_206_with_that_part(api, range_header, expected):
    audio_id = factories.audio_file(api.actor)
    response = download(api, audio_id, 206, Range=range_header)
    assert response.content == WAV[expected]


def test_a_range_past_the_end_is_416(api):
    audio_id = factories.audio_file(api.actor)
    response = download(api, audio_id, 416, Range=f"bytes={len(WAV)}-")
    assert response.headers["content-range"] == f"bytes */{len(WAV)}"
    assert "Range" in download(api, audio_id, 400, Range="bytes=abc").json()["data"]["message"]


def test_another_workspaces_audio_is_404(api, platform):
    audio_id = factories.audio_file(api.actor)
    other = Api(platform, platform.workspace("other"))
    for method, path in (("GET", ""), ("DELETE", "")):
        other(method, f"/audio/{audio_id}{path}", 404)
    other("PATCH", f"/audio/{audio_id}", 404, json={"name": "Mine"})
    download(other, audio_id, 404)
    assert other("GET", "/audio")["pagination"]["total"] == 0
    api("GET", f"/audio/{audio_id}")
    api("GET", f"/audio/{uuid.uuid4()}", 404)
