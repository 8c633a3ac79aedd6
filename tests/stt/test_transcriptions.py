"""POST /v1/audio/transcriptions against the real server and engine."""
from __future__ import annotations

import io
import struct
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.speech import FIXTURES, JFK, words
from tests.support.speech_server import make_key, start_stt, stop_stt
from tests.support.transcriptions import URL, assert_openai_error, jfk, post

FORMATS = ["wav", "mp3", "flac", "ogg", "m4a", "webm"]


@pytest.mark.parametrize("ext", FORMATS)
def test_every_format_is_transcribed(stt, ext):
    r = post(stt, files=jfk(ext))
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"text", "inference_time_ms"} and body["inference_time_ms"] > 0
    assert words(body["text"]) == words(JFK)


def test_text_format_is_plain_text(stt):
    r = post(stt, files=jfk(), data={"response_format": "text"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    assert words(r.text) == words(JFK) and not r.text.lstrip().startswith("{")


def test_verbose_json_has_language_and_word_confidences(stt):
    r = post(stt, files=jfk(), data={"response_format": "verbose_json"})
    body = r.json()
    assert body["language"] == "english" and words(body["text"]) == words(JFK)
    assert body["inference_time_ms"] > 0 and abs(body["duration"] - 11.0) < 0.1
    assert [w.strip(",.").lower() for w in (x["word"] for x in body["words"])] == words(JFK)
    assert all(0.0 <= w["confidence"] <= 1.0 for w in body["words"])
    # A clear recording: most words are confident.
    assert sorted(w["confidence"] for w in body["words"])[len(body["words"]) // 2] > 0.5
    assert body["segments"] and body["segments"][0]["start"] == 0.0


@pytest.mark.parametrize("fmt, head", [("srt", "1\n00:00:00,000 --> "), ("vtt", "WEBVTT\n\n00:00:00.000 --> ")])
def test_subtitle_formats(stt, fmt, head):
    r = post(stt, files=jfk(), data={"response_format": fmt})
    assert r.status_code == 200 and r.text.startswith(head) and "Americans" in r.text


def test_temperature_bounds(stt):
    for value in ("0", "1", "0.4"):
        assert post(stt, files=jfk(), data={"temperature": value}).status_code == 200
    for value in ("-0.01", "1.01", "hot"):
        assert_openai_error(post(stt, files=jfk(), data={"temperature": value}), 400, "temperature")


def test_openai_client(stt):
    from openai import OpenAI
    client = OpenAI(api_key=stt.token, base_url=stt.url + "/v1")
    with open(FIXTURES / "jfk.mp3", "rb") as f:
        result = client.audio.transcriptions.create(model="svc-stt", file=f)
    assert words(result.text) == words(JFK)
    with open(FIXTURES / "jfk.wav", "rb") as f:
        text = client.audio.transcriptions.create(model="svc-stt", file=f, response_format="text")
    assert words(text) == words(JFK)
    with open(FIXTURES / "jfk.flac", "rb") as f:
        verbose = client.audio.transcriptions.create(model="svc-stt", file=f, response_format="verbose_json")
    assert verbose.language == "english" and words(verbose.text) == words(JFK)


# --- errors ---------------------------------------------------------------------------------

def test_no_or_bad_key_is_401(stt):
    assert_openai_error(post(stt, files=jfk(), headers={}), 401)
    error = assert_openai_error(post(stt, files=jfk(), headers={"Authorization": "Bearer vak_nope"}), 401)
    assert error["code"] == "invalid_api_key"


def test_an_api_key_works_and_its_rate_limit_applies(stt):
    owner = stt.admin("bootstrap", "--workspace", "limited", "--email", "limited@example.com")
    # One a day as well as one a minute: a slow first transcription may end in the next minute.
    key = make_key(stt.env, owner, rate_limit=(1, 1))
    headers = {"Authorization": f"Bearer {key}"}
    assert post(stt, files=jfk("ogg"), headers=headers).status_code == 200
    r = post(stt, files=jfk("ogg"), headers=headers)
    error = assert_openai_error(r, 429)
    assert error["code"] == "rate_limit_exceeded" and int(r.headers["retry-after"]) >= 1


def test_transcribing_needs_speech_transcribe_and_says_so(stt):
    """A key frozen without speech:transcribe, or a viewer, is refused with 403 naming it; the rate
    limit still counted the request, and its headers say so on the refusal too."""
    owner = stt.admin("bootstrap", "--workspace", "perms", "--email", "perms@example.com")
    viewer = stt.admin("member", "--workspace-id", owner["workspaceId"], "--email", "viewer@example.com",
                       "--role", "viewer")
    viewer_token = stt.admin("token", "--email", "viewer@example.com")["token"]
    assert viewer["role"] == "viewer"
    without = make_key(stt.env, owner, rate_limit=(5, 100), permissions=["calls:read"])
    for secret in (without, viewer_token):
        r = post(stt, files=jfk("ogg"), headers={"Authorization": f"Bearer {secret}"})
        error = assert_openai_error(r, 403)
        assert "speech:transcribe" in error["message"] and error["code"] == "forbidden"
    assert r.headers.get("ratelimit-limit") is not None
    with_it = make_key(stt.env, owner, rate_limit=(5, 100), permissions=["speech:transcribe"])
    r = post(stt, files=jfk("ogg"), headers={"Authorization": f"Bearer {with_it}"})
    assert r.status_code == 200 and r.headers["ratelimit-limit"] == "5" and r.headers["ratelimit-remaining"] == "4"
    # Listing the models needs a valid credential only.
    models = httpx.get(f"{stt.url}/v1/models", headers={"Authorization": f"Bearer {without}"})
    assert models.status_code == 200 and models.headers["ratelimit-limit"] == "5"


@pytest.mark.parametrize("bad", ["\x00", "\x1b", "\x85"])
def test_a_control_character_in_the_workspace_is_400_not_a_server_error(stt, bad):
    r = httpx.post(f"{stt.url}/v1/audio/transcriptions", params={"workspaceId": f"w{bad}"}, headers=stt.headers,
                   files=jfk("ogg"))
    assert "workspaceId" in assert_openai_error(r, 400)["message"]


def test_an_error_after_admission_carries_the_rate_limit_headers(stt):
    r = post(stt, data={"model": "svc-stt"}, files={"other": ("x.txt", b"x")})
    assert r.status_code == 400 and "ratelimit-remaining" in r.headers


def test_missing_file(stt):
    assert_openai_error(post(stt, data={"model": "svc-stt"}, files={"other": ("x.txt", b"x")}), 400, "file", "file")


def test_not_multipart(stt):
    r = httpx.post(stt.url + URL, json={"file": "x"}, headers=stt.headers)
    assert_openai_error(r, 400, "file", "multipart")


def test_unsupported_format_lists_the_supported_ones(stt):
    error = assert_openai_error(post(stt, files={"file": ("notes.txt", b"hello")}), 400, "file", "txt")
    assert all(fmt in error["message"] for fmt in FORMATS)


def test_a_video_or_other_container_is_refused_even_if_named_wav(stt):
    import av
    buf = io.BytesIO()
    with av.open(buf, "w", format="aiff") as out:
        stream = out.add_stream("pcm_s16be", rate=16000)
        frame = av.AudioFrame(format="s16", layout="mono", samples=1600)
        frame.sample_rate = 16000
        for p in frame.planes:
            p.update(bytes(p.buffer_size))
        for packet in stream.encode(frame):
            out.mux(packet)
    error = assert_openai_error(post(stt, files={"file": ("x.wav", buf.getvalue())}), 400, "file")
    assert all(fmt in error["message"] for fmt in FORMATS)


@pytest.mark.parametrize("content", [b"RIFF\x00\x00garbage" * 10, bytes(range(256)) * 40, (FIXTURES / "jfk.mp3").read_bytes()[:300]])
def test_undecodable_audio_is_400_and_the_server_keeps_serving(stt, content):
    assert_openai_error(post(stt, files={"file": ("broken.wav", content)}), 400, "file")
    assert post(stt, files=jfk("flac")).status_code == 200


def test_empty_file(stt):
    assert_openai_error(post(stt, files={"file": ("empty.wav", b"")}), 400, "file", "empty")


def test_a_file_without_samples_is_400(stt):
    header = b"RIFF" + struct.pack("<I", 36) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, 1, 16000, 32000, 2, 16) \
        + b"data" + struct.pack("<I", 0)
    assert_openai_error(post(stt, files={"file": ("silent.wav", header)}), 400, "file")


def test_bad_response_format(stt):
    assert_openai_error(post(stt, files=jfk(), data={"response_format": "xml"}), 400, "response_format", "verbose_json")


def test_unknown_model_lists_the_known_ones(stt):
    error = assert_openai_error(post(stt, files=jfk(), data={"model": "whisper-2"}), 400, "model", "svc-stt",
                                "whisper-1")
    assert error["code"] == "model_not_found"


def wav_of_size(size: int) -> bytes:
    """A valid 48 kHz stereo PCM WAV file of exactly ``size`` bytes (speech, then silence)."""
    import numpy as np

    from stt.audio import decode
    speech = decode(FIXTURES / "jfk.wav")
    frames = (size - 44) // 4
    assert 44 + frames * 4 == size
    up = np.repeat(speech, 3)[:frames]
    pcm = np.zeros((frames, 2), dtype="<i2")
    pcm[: up.size, 0] = pcm[: up.size, 1] = (up * 32767).astype("<i2")
    data = pcm.tobytes()
    return (b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt "
            + struct.pack("<IHHIIHH", 16, 1, 2, 48000, 192000, 4, 16) + b"data" + struct.pack("<I", len(data)) + data)


LIMIT = 15 * 1024 * 1024


def test_15_mb_exactly_is_accepted(stt):
    body = wav_of_size(LIMIT)
    assert len(body) == LIMIT
    r = post(stt, files={"file": ("long.wav", body)}, timeout=300)
    assert r.status_code == 200, r.text
    assert words(r.json()["text"])[:4] == ["and", "so", "my", "fellow"]


def test_just_over_15_mb_is_413(stt):
    body = wav_of_size(LIMIT) + b"\x00"
    error = assert_openai_error(post(stt, files={"file": ("long.wav", body)}), 413, "file")
    assert error["code"] == "file_too_large"


def test_a_huge_declared_body_is_refused_before_reading(stt):
    import socket
    host, port = stt.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall((f"POST {URL} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {stt.token}\r\n"
                   "Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 1000000000\r\n\r\n").encode())
        reply = s.recv(4096).decode()
    assert reply.startswith("HTTP/1.1 413")


def test_health_ready_metrics(stt):
    assert httpx.get(stt.url + "/health").json() == {"status": "ok"}
    assert httpx.get(stt.url + "/ready").json()["models"][0] == "svc-stt"

    def scrape() -> dict:
        response = httpx.get(stt.url + "/metrics")
        assert response.headers["content-type"].startswith("text/plain")
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for family in text_string_to_metric_families(response.text) for s in family.samples}

    upload = ("stt_requests_total", (("route", "/v1/audio/transcriptions"), ("status", "200")))
    timed = ("stt_request_duration_seconds_count", (("route", "/v1/audio/transcriptions"),))
    before = scrape()
    assert post(stt, files=jfk()).status_code == 200
    assert httpx.get(stt.url + "/v1/no-such-route").status_code == 404
    after = scrape()
    assert after[upload] - before.get(upload, 0.0) == 1 and after[timed] - before.get(timed, 0.0) == 1
    unrouted = ("stt_requests_total", (("route", "-"), ("status", "404")))
    assert after[unrouted] - before.get(unrouted, 0.0) == 1
    audio = ("stt_audio_seconds_total", ())
    assert after[audio] - before[audio] == pytest.approx(11.0, abs=0.1)
    assert after[("stt_inference_seconds_total", ())] > before[("stt_inference_seconds_total", ())]
    rtf = ("stt_real_time_factor_count", ())
    assert after[rtf] - before[rtf] == 1
    assert after[("stt_queue_depth", ())] == 0 and after[("stt_streams", ())] == 0
    # Only the speech server's own metrics.
    assert {name.split("_")[0] for name, _ in after} <= {"stt", "python", "process"}


def test_unknown_path_in_openai_shape(stt):
    assert_openai_error(httpx.get(stt.url + "/v1/nope"), 404)


# --- saturation -----------------------------------------------------------------------------

def test_requests_beyond_the_queue_get_503(tmp_path, converted_model):
    server = start_stt(tmp_path, converted_model, STT_WORKERS=1, STT_QUEUE=1)
    try:
        body = (FIXTURES / "jfk.wav").read_bytes()

        def call(_):
            return httpx.post(server.url + URL, files={"file": ("jfk.wav", body)}, headers=server.headers, timeout=300)

        with ThreadPoolExecutor(6) as pool:
            responses = list(pool.map(call, range(6)))
        statuses = sorted(r.status_code for r in responses)
        assert statuses.count(200) >= 2 and 503 in statuses, statuses
        refused = next(r for r in responses if r.status_code == 503)
        assert refused.headers["retry-after"] and refused.json()["error"]["code"] == "overloaded"
        assert all(words(r.json()["text"]) == words(JFK) for r in responses if r.status_code == 200)
    finally:
        stop_stt(server)


def test_the_multilingual_model_detects_the_language(stt):
    r = post(stt, files=jfk("flac"), data={"model": "svc-stt-multilingual", "response_format": "verbose_json"})
    assert r.status_code == 200, r.text
    assert r.json()["language"] == "english" and words(r.json()["text"]) == words(JFK)
    r = post(stt, files=jfk("flac"), data={"model": "svc-stt-multilingual", "language": "en", "response_format": "verbose_json"})
    assert r.status_code == 200, r.text
    assert r.json()["language"] == "english" and words(r.json()["text"]) == words(JFK)


def test_an_unknown_language_is_400(stt):
    assert_openai_error(post(stt, files=jfk(), data={"language": "klingon"}), 400, "language")


def test_the_access_line_names_the_route_and_the_credential_never_the_secret(tmp_path, converted_model):
    server = start_stt(tmp_path, converted_model, LOG_LEVEL="INFO")
    try:
        assert httpx.get(f"{server.url}/v1/models", headers=server.headers).status_code == 200
        assert httpx.get(f"{server.url}/v1/x%0A2026-01-01 INFO forged").status_code == 404
    finally:
        stop_stt(server)
    log = next(tmp_path.glob("stt-*.log")).read_text()
    listed = [line for line in log.splitlines() if " stt.access GET /v1/models " in line]
    assert len(listed) == 1, log
    # method, path, route, status, ms, request id, credential id
    fields = listed[0].split(" stt.access ", 1)[1].split()
    assert fields[2] == "/v1/models" and fields[3] == "200" and fields[6] not in ("-", server.token)
    assert server.token not in log and server.token.split("_", 1)[1] not in log
    assert not any(line.startswith("2026-01-01 INFO forged") for line in log.splitlines())
    assert "/v1/x\\x0a2026-01-01 INFO forged - 404" in log
