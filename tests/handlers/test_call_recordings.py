"""A call's recording over HTTP: upload (streamed, bounded, typed), download with Range, and the
limits a hostile client meets. Transcription itself: tests/api/test_transcription.py."""
from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path

import pytest

from models.kernel.db import utcnow
from tests.support import factories
from tests.support.client import Api
from tests.support.held_exchanges import HeldExchange
from tests.support.uploads import WAV, upload

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def download(api: Api, call_id: str, expect: int = 200, **headers):
    response = api.client.get(f"/api/v2/call/{call_id}/recording", params={"workspaceId": api.actor.workspace_id},
                              headers={**api.actor.headers, **headers})
    assert response.status_code == expect, response.text
    return response


def recording_files(platform_dir: Path) -> list[Path]:
    return sorted(p for p in (platform_dir / "recordings").rglob("*") if p.is_file())


@pytest.fixture
def api(platform):
    return Api(platform, platform.workspace())


def test_an_upload_is_stored_read_back_whole_and_shown_on_the_call(api, tmp_path):
    call_id = factories.call(api.actor, recording_url="https://recordings.example.com/a.wav")
    result = upload(api, call_id, WAV, "audio/wav; codec=pcm")
    assert result["callId"] == call_id and result["bytes"] == len(WAV)
    assert result["contentType"] == "audio/wav" and result["transcriptionStatus"] == "pending"
    response = download(api, call_id)
    assert response.content == WAV
    assert response.headers["content-type"] == "audio/wav"
    assert response.headers["accept-ranges"] == "bytes" and int(response.headers["content-length"]) == len(WAV)
    call = api("GET", f"/call/{call_id}")["call"]
    assert call["recording"] == {"contentType": "audio/wav", "bytes": len(WAV), "uploadedAt": result["uploadedAt"]}
    assert call["recordingUrl"] == "https://recordings.example.com/a.wav"  # the report's, kept as it came
    assert call["hasRecording"] is True and call["transcriptionStatus"] == "pending"
    assert call["transcription"]["status"] == "pending" and call["transcription"]["text"] is None
    assert [p.name.count(".") for p in recording_files(tmp_path)] == [1]  # one file, no .part left


@pytest.mark.parametrize("range_header, status, expected", [
    ("bytes=0-99", 206, slice(0, 100)),
    ("bytes=100-", 206, slice(100, None)),
    ("bytes=-500", 206, slice(-500, None)),
    (f"bytes={len(WAV) - 1}-{len(WAV) + 50}", 206, slice(len(WAV) - 1, None)),  # clipped to the end
])
def test_a_range_gets_206_with_that_part(api, range_header, status, expected):
    call_id = factories.call(api.actor)
    upload(api, call_id, WAV)
    response = download(api, call_id, status, Range=range_header)
    assert response.content == WAV[expected]
    start = range(len(WAV))[expected][0]
    assert response.headers["content-range"] == f"bytes {start}-{start + len(response.content) - 1}/{len(WAV)}"


def test_a_range_past_the_end_is_416_and_a_malformed_one_400_in_the_envelope(api):
    call_id = factories.call(api.actor)
    upload(api, call_id, WAV)
    response = download(api, call_id, 416, Range=f"bytes={len(WAV)}-")
    assert response.headers["content-range"] == f"bytes */{len(WAV)}"
    assert response.json()["success"] is False and str(len(WAV)) in response.json()["data"]["message"]
    for malformed in ("bytes=abc", "0", "bytes=9-2", "items=0-5", "bytes=,"):
        assert "Range" in download(api, call_id, 400, Range=malformed).json()["data"]["message"]
    # Over 100 ranges: ignored, as RFC 9110 lets a server do, and the whole file sent.
    assert download(api, call_id, 200, Range="bytes=" + ",".join(f"{i}-{i}" for i in range(101))).content == WAV


def test_a_new_upload_replaces_the_file_and_resets_the_transcription(api, tmp_path):
    call_id = factories.call(api.actor)
    upload(api, call_id, WAV)
    mp3 = (FIXTURES / "jfk.mp3").read_bytes()
    upload(api, call_id, mp3, "audio/mpeg")
    assert download(api, call_id).content == mp3
    assert download(api, call_id).headers["content-type"] == "audio/mpeg"
    assert len(recording_files(tmp_path)) == 1


def test_deleting_the_call_deletes_its_file(api, tmp_path):
    call_id = factories.call(api.actor)
    upload(api, call_id, WAV)
    api("DELETE", f"/call/{call_id}")
    assert recording_files(tmp_path) == []
    download(api, call_id, 404)


def test_a_call_without_an_upload_or_of_another_workspace_is_404(api, platform):
    call_id = factories.call(api.actor, recording_url="https://recordings.example.com/a.wav")
    assert "recordingUrl" in download(api, call_id, 404).json()["data"]["message"]
    other = Api(platform, platform.workspace("other"))
    upload(other, call_id, WAV, expect=404)
    upload(api, call_id, WAV)
    download(other, call_id, 404)
    upload(api, str(uuid.uuid4()), WAV, expect=404)


@pytest.mark.parametrize("content_type, status", [
    ("audio/aiff", 415), ("application/json", 415), ("text/plain", 415), ("video/mp4", 415)])
def test_a_type_that_is_not_a_recording_format_is_415_naming_the_accepted_ones(api, content_type, status, tmp_path):
    call_id = factories.call(api.actor)
    data = upload(api, call_id, WAV, content_type, expect=status)
    assert "audio/wav" in data["message"] or "audio/*" in data["message"]
    assert recording_files(tmp_path) == []


@pytest.mark.parametrize("fixture, stored", [
    ("jfk.wav", "audio/wav"), ("jfk.mp3", "audio/mpeg"), ("jfk.flac", "audio/flac"), ("jfk.ogg", "audio/ogg"),
    ("jfk.m4a", "audio/mp4"), ("jfk.webm", "audio/webm")])
def test_bytes_sent_as_octet_stream_are_kept_with_the_format_their_first_bytes_show(api, fixture, stored):
    call_id = factories.call(api.actor)
    audio = (FIXTURES / fixture).read_bytes()
    result = upload(api, call_id, audio, "application/octet-stream")
    assert result["contentType"] == stored and result["bytes"] == len(audio)
    response = download(api, call_id)
    assert response.content == audio and response.headers["content-type"] == stored


@pytest.mark.parametrize("body", [b"\x00" * 64, b"RIFF\x00\x00\x00\x00AVI ", b"\xff\xf1" + b"\x00" * 30, b"x"])
def test_octet_stream_bytes_of_no_known_format_are_kept_as_such_and_left_to_the_transcription(api, body):
    # An AVI's RIFF header is no WAV, nor is an AAC frame (layer bits 0) an MP3; one byte shows nothing.
    call_id = factories.call(api.actor)
    assert upload(api, call_id, body, "application/octet-stream")["contentType"] == "application/octet-stream"
    assert api("GET", f"/call/{call_id}")["call"]["transcriptionStatus"] == "pending"


def test_an_empty_octet_stream_is_400_like_any_empty_body(api, tmp_path):
    call_id = factories.call(api.actor)
    assert "empty" in upload(api, call_id, b"", "application/octet-stream", expect=400)["message"]
    assert recording_files(tmp_path) == []


def test_an_empty_body_is_400_and_leaves_nothing(api, tmp_path):
    call_id = factories.call(api.actor)
    assert "empty" in upload(api, call_id, b"", expect=400)["message"]
    assert recording_files(tmp_path) == []
    assert api("GET", f"/call/{call_id}")["call"]["recording"] is None


@pytest.mark.parametrize("settings_overrides", [{"max_recording_bytes": 1000}])
@pytest.mark.parametrize("chunked", [False, True])
def test_the_size_limit_holds_at_its_boundary_declared_or_chunked(api, tmp_path, settings_overrides, chunked):
    call_id = factories.call(api.actor)

    def body(size: int):
        data = WAV[:size]
        if not chunked:
            return data
        return (data[i:i + 300] for i in range(0, len(data), 300))  # no Content-Length: chunked

    assert upload(api, call_id, body(1000))["bytes"] == 1000
    data = upload(api, call_id, body(1001), expect=413)
    assert "1000 bytes" in data["message"]
    assert download(api, call_id).content == WAV[:1000]  # the refused upload changed nothing
    assert len(recording_files(tmp_path)) == 1


def test_permissions_split_upload_and_download(api, platform):
    call_id = factories.call(api.actor)
    reader = platform.key_actor(api.actor, permissions=["calls:read", "calls:recording-download"])
    uploader = platform.key_actor(api.actor, permissions=["calls:recording-upload"])
    upload(Api(platform, reader), call_id, WAV, expect=403)
    upload(Api(platform, uploader), call_id, WAV)
    download(Api(platform, uploader), call_id, 403)
    assert download(Api(platform, reader), call_id).content == WAV


def held_download(api: Api, call_id: str, **headers) -> HeldExchange:
    return HeldExchange(api.client, f"/api/v2/call/{call_id}/recording", params={"workspaceId": api.actor.workspace_id},
                        headers={**api.actor.headers, **headers})


@pytest.mark.parametrize("range_header, status, part", [
    (None, 200, slice(None)), ("bytes=100-", 206, slice(100, None)), ("bytes=-70000", 206, slice(-70000, None))])
def test_a_download_begun_before_a_new_upload_ends_with_the_bytes_it_began_with(api, tmp_path, range_header,
                                                                                 status, part):
    # Longer than one read from disk (64 KiB), so that the body comes in several parts.
    call_id = factories.call(api.actor)
    upload(api, call_id, WAV)
    held = held_download(api, call_id, **({"Range": range_header} if range_header else {}))
    assert held.status == status and int(held.headers["content-length"]) == len(WAV[part])
    replacement = b"RIFF" + bytes(reversed(WAV[4:]))
    upload(api, call_id, replacement)
    assert [p.read_bytes() for p in recording_files(tmp_path)] == [replacement]  # the old file's name is gone
    assert held.read_body() == WAV[part] and held.complete
    assert download(api, call_id).content == replacement


def delete_call(api: Api, call_id: str) -> int:
    api("DELETE", f"/call/{call_id}")
    return 404


def purge_it(api: Api, call_id: str) -> int:
    api("PATCH", "/workspace", json={"settings": {"dataRetentionDays": 1}})
    assert api("POST", "/workspace/retention/purge", json={})["deleted"]["recordings"] == 1
    return 404


def delete_the_workspace(api: Api, call_id: str) -> int:
    api("DELETE", "/workspace", confirmName="acme")
    return 403  # the caller's membership went with it


@pytest.mark.parametrize("delete", [delete_call, purge_it, delete_the_workspace])
def test_a_download_begun_before_a_deletion_ends_whole_and_the_next_is_refused(api, tmp_path, delete):
    call_id = factories.call(api.actor, started_at=utcnow() - timedelta(days=2))
    upload(api, call_id, WAV)
    held = held_download(api, call_id, Range="bytes=10-")
    refused = delete(api, call_id)
    assert recording_files(tmp_path) == []
    assert held.read_body() == WAV[10:] and held.complete
    download(api, call_id, refused)


def test_a_recording_whose_file_is_gone_is_404_in_the_envelope(api, tmp_path):
    call_id = factories.call(api.actor)
    upload(api, call_id, WAV)
    recording_files(tmp_path)[0].unlink()  # as a deletion racing this download leaves it
    assert "replaced or deleted meanwhile" in download(api, call_id, 404).json()["data"]["message"]


def test_several_ranges_come_as_multipart_byteranges_of_the_file(api):
    call_id = factories.call(api.actor)
    upload(api, call_id, WAV)
    response = download(api, call_id, 206, Range="bytes=0-9, 100-109")
    boundary = response.headers["content-type"].removeprefix("multipart/byteranges; boundary=")
    assert int(response.headers["content-length"]) == len(response.content)
    parts = response.content.split(f"--{boundary}".encode())
    assert parts[0] == b"" and parts[-1] == b"--"
    for part, (first, last) in zip(parts[1:-1], [(0, 9), (100, 109)], strict=True):
        head, body = part.split(b"\r\n\r\n", 1)
        assert f"Content-Range: bytes {first}-{last}/{len(WAV)}".encode() in head
        assert body == WAV[first:last + 1] + b"\r\n"


def test_a_range_with_an_if_range_of_another_version_gets_the_whole_file(api):
    call_id = factories.call(api.actor)
    upload(api, call_id, WAV)
    etag = download(api, call_id).headers["etag"]
    assert download(api, call_id, 206, Range="bytes=0-9", **{"If-Range": etag}).content == WAV[:10]
    assert download(api, call_id, 200, Range="bytes=0-9", **{"If-Range": '"another"'}).content == WAV
