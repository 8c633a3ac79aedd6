"""A few small hostile requests must not shut everyone else out of the speech server's uploads.

Stalled bodies, audio that decompresses to hours, clients that leave while their job waits, and
what the headers give away, each against a real server started with small settings, over real
sockets. Test audio is made here (JFK's clip repeated, silence) rather than stored.
"""
from __future__ import annotations

import base64
import functools
import hashlib
import io
import json
import os
import re
import socket
import struct
import threading
import time
import tracemalloc
from pathlib import Path

import av
import httpx
import numpy as np
import pytest

from stt.audio import SAMPLE_RATE, AudioStream, AudioTooLong, decode, describe_seconds
from stt.passes import quietest_cut
from tests.support.speech import FIXTURES, JFK, wer, words
from tests.support.speech_server import start_stt, stop_stt

URL = "/v1/audio/transcriptions"
BODY_TIMEOUT_S = 2.0
LIMIT_S = 20  # STT_MAX_AUDIO_SECONDS of the guarded server
APP_ORIGIN = "https://app.example.com"


# --- audio made for the tests ------------------------------------------------------------------

@functools.cache
def jfk() -> np.ndarray:
    return decode(FIXTURES / "jfk.wav")


def speech(seconds: float) -> np.ndarray:
    """JFK's 11 s, each followed by a second of silence, for ``seconds``."""
    one = np.concatenate([jfk(), np.zeros(SAMPLE_RATE, dtype=np.float32)])
    return np.tile(one, int(seconds * SAMPLE_RATE) // one.size + 1)[: int(seconds * SAMPLE_RATE)]


def speech_reference(seconds: float) -> list[str]:
    return words(JFK) * round(seconds / (jfk().size / SAMPLE_RATE + 1))


def wav(samples: np.ndarray) -> bytes:
    """16 kHz mono PCM WAV: its header states the duration to the sample."""
    pcm = (samples * 32767).astype("<i2").tobytes()
    return (b"RIFF" + struct.pack("<I", 36 + len(pcm)) + b"WAVEfmt "
            + struct.pack("<IHHIIHH", 16, 1, 1, SAMPLE_RATE, 2 * SAMPLE_RATE, 2, 16)
            + b"data" + struct.pack("<I", len(pcm)) + pcm)


def opus(samples: np.ndarray, container: str = "ogg", **options: str) -> bytes:
    """Opus in Ogg, or in WebM (``live="1"``: written as a browser records, with no duration)."""
    out_file = io.BytesIO()
    with av.open(out_file, "w", format=container, options=options) as out:
        stream = out.add_stream("libopus", rate=SAMPLE_RATE)
        stream.layout = "mono"
        pcm = (samples * 32767).astype(np.int16)
        block = 10 * SAMPLE_RATE
        for start in range(0, pcm.size, block):
            frame = av.AudioFrame.from_ndarray(pcm[None, start:start + block], format="s16", layout="mono")
            frame.sample_rate, frame.pts = SAMPLE_RATE, start
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return out_file.getvalue()


def silence(seconds: float) -> np.ndarray:
    return np.zeros(int(seconds * SAMPLE_RATE), dtype=np.float32)


# --- raw HTTP, for clients that stall or leave --------------------------------------------------

BOUNDARY = "hostile-uploads"


def multipart(file: bytes, filename: str) -> bytes:
    return (f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n").encode() + file + f"\r\n--{BOUNDARY}--\r\n".encode()


def head(server, length: int) -> bytes:
    return (f"POST {URL} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {server.token}\r\n"
            f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {length}\r\n\r\n").encode()


def connect(server) -> socket.socket:
    host, port = server.url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=30)


def stalled_upload(server) -> socket.socket:
    """Headers and the first 4 bytes of a body, then nothing."""
    body = multipart(wav(jfk()), "jfk.wav")
    sock = connect(server)
    sock.sendall(head(server, len(body)) + body[:4])
    return sock


def reply(sock: socket.socket, timeout: float) -> bytes:
    """One response, head and body (by its Content-Length); b"" if the connection closes first."""
    sock.settimeout(timeout)
    data = b""
    while b"\r\n\r\n" not in data:
        if not (chunk := sock.recv(65536)):
            return data
        data += chunk
    length = int(re.search(rb"(?i)\r\ncontent-length: (\d+)", data).group(1))
    while len(data.partition(b"\r\n\r\n")[2]) < length:
        data += sock.recv(65536)
    return data


def closed(sock: socket.socket, timeout: float) -> bool:
    """Whether the server closes the connection within ``timeout``."""
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def post(server, file: bytes, filename: str, data: dict | None = None, timeout: float = 120) -> httpx.Response:
    return httpx.post(server.url + URL, files={"file": (filename, file)}, data=data, headers=server.headers,
                      timeout=timeout)


def openai_error(response: httpx.Response, status: int, code: str | None) -> str:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["code"] == code, error
    return error["message"]


def metric(server, name: str) -> float:
    for line in httpx.get(server.url + "/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"no {name} in /metrics")


def wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.1)


def cpu_seconds(pid: int) -> float:
    """User and system time of a process, all its threads."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --- servers -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def guarded(tmp_path_factory, converted_model):
    """One engine worker and one queued upload (room for 2), a short body timeout, a 20 s audio limit."""
    server = start_stt(tmp_path_factory.mktemp("guarded"), converted_model, STT_WORKERS=1, STT_QUEUE=1,
                       STT_BODY_TIMEOUT_S=BODY_TIMEOUT_S, STT_MAX_AUDIO_SECONDS=LIMIT_S)
    yield server
    stop_stt(server)


@pytest.fixture(scope="module")
def busy(tmp_path_factory, converted_model):
    """One engine worker and two queued uploads, the default audio limit, one CORS origin."""
    server = start_stt(tmp_path_factory.mktemp("busy"), converted_model, STT_WORKERS=1, STT_QUEUE=2,
                       CORS_ORIGINS=APP_ORIGIN)
    yield server
    stop_stt(server)


# --- 1. stalled uploads ------------------------------------------------------------------------

def test_stalled_uploads_beyond_capacity_do_not_keep_a_normal_upload_out(guarded):
    """A place is taken once the body is in: four stalled bodies hold none of the two places."""
    stalled = [stalled_upload(guarded) for _ in range(4)]
    try:
        time.sleep(0.3)
        r = post(guarded, wav(jfk()), "jfk.wav")
        assert r.status_code == 200, r.text
        assert words(r.json()["text"]) == words(JFK)
    finally:
        for sock in stalled:
            sock.close()


def test_a_stalled_body_gets_408_and_its_connection_is_closed_after_the_timeout(guarded):
    sock = stalled_upload(guarded)
    started = time.monotonic()
    with sock:
        answer = reply(sock, timeout=30)
        elapsed = time.monotonic() - started
        assert closed(sock, timeout=1), "the connection stayed open after the 408"
    # Dropped once nothing came for the timeout: not before it, and well before the 30 s wait ends.
    assert BODY_TIMEOUT_S <= elapsed < BODY_TIMEOUT_S + 4, elapsed
    status, _, rest = answer.partition(b"\r\n")
    assert status == b"HTTP/1.1 408 Request Timeout", answer[:200]
    headers, _, body = rest.partition(b"\r\n\r\n")
    assert b"connection: close" in headers.lower()
    response = httpx.Response(408, content=body, headers={"content-type": "application/json"})
    assert "send the body without pausing" in openai_error(response, 408, "body_timeout")


def test_a_slow_body_that_keeps_arriving_is_read_to_the_end(guarded):
    """Pauses of half the timeout, 1.5 times the timeout in all: the upload is transcribed."""
    body = multipart(wav(jfk()), "jfk.wav")
    first, *rest = np.array_split(np.frombuffer(body, dtype=np.uint8), 4)
    with connect(guarded) as sock:
        sock.sendall(head(guarded, len(body)) + first.tobytes())
        for piece in rest:
            time.sleep(BODY_TIMEOUT_S / 2)
            sock.sendall(piece.tobytes())
        answer = reply(sock, timeout=60)
    assert answer.startswith(b"HTTP/1.1 200 OK"), answer[:300]
    assert words(json.loads(answer.partition(b"\r\n\r\n")[2])["text"]) == words(JFK)


# --- 2. long audio -----------------------------------------------------------------------------

def test_a_stated_duration_over_the_limit_is_refused_at_once_naming_the_limit(guarded):
    """Ten minutes of Opus silence is 136 kB, and would be 38 MB of samples: its header says how
    long it is, and that is refused before anything is decoded, in one sentence naming the limit."""
    r = post(guarded, opus(silence(600)), "silence.ogg")
    message = openai_error(r, 400, "audio_too_long")
    assert message == "The audio is too long: it lasts 10 minutes (600 s); the limit is 20 s."
    assert "decoded" not in message


def test_lengths_are_named_in_minutes_and_seconds():
    assert [describe_seconds(s) for s in (20, 59.96, 60, 90, 1800, 7140.4)] == [
        "20 s", "60 s", "1 minute (60 s)", "1.5 minutes (90 s)", "30 minutes (1800 s)", "119 minutes (7140.4 s)"]


def test_audio_of_exactly_the_limit_is_transcribed_and_one_sample_more_is_refused(guarded):
    audio = np.concatenate([jfk(), silence(LIMIT_S - jfk().size / SAMPLE_RATE)])
    assert audio.size == LIMIT_S * SAMPLE_RATE
    r = post(guarded, wav(audio), "limit.wav", data={"response_format": "verbose_json"})
    assert r.status_code == 200, r.text
    assert r.json()["duration"] == LIMIT_S and words(r.json()["text"]) == words(JFK)
    # 62.5 µs over: within what a header may overstate, so decoding finds it.
    r = post(guarded, wav(np.concatenate([audio, silence(1 / SAMPLE_RATE)])), "over.wav")
    assert openai_error(r, 400, "audio_too_long") == "The audio is too long: it lasts longer than the limit of 20 s."


def test_without_a_stated_duration_decoding_stops_at_the_limit(guarded):
    """WebM as a browser records it states no duration: the limit holds while decoding."""
    within = opus(np.concatenate([jfk(), silence(LIMIT_S - 11.02)]), "webm", live="1")
    beyond = opus(np.concatenate([jfk(), silence(LIMIT_S - 11.0 + 0.02)]), "webm", live="1")
    with av.open(io.BytesIO(beyond)) as container:
        assert container.duration is None
    r = post(guarded, within, "within.webm")
    assert r.status_code == 200 and words(r.json()["text"]) == words(JFK), r.text
    message = openai_error(post(guarded, beyond, "beyond.webm"), 400, "audio_too_long")
    assert message == "The audio is too long: it lasts longer than the limit of 20 s."


def test_without_a_stated_duration_the_packets_tell_before_anything_is_decoded(guarded):
    recorded = opus(silence(600), "webm", live="1")
    with pytest.raises(AudioTooLong):
        AudioStream(recorded, max_seconds=LIMIT_S)  # opening decodes nothing
    message = openai_error(post(guarded, recorded, "recorded.webm"), 400, "audio_too_long")
    assert message == "The audio is too long: it lasts longer than the limit of 20 s."


@pytest.mark.slow  # large data: decodes a long file
def test_decoding_holds_a_piece_never_the_file_and_stops_at_the_limit():
    """Samples held while reading ten minutes piece by piece: about one 30 s piece (2 MB), where
    the whole file is 38 MB. A file whose packets end within a second past the limit is opened,
    and decoding stops as soon as it passes the limit."""
    ten_minutes, just_over = opus(silence(600), "webm", live="1"), opus(silence(LIMIT_S + 0.9), "webm", live="1")
    tracemalloc.start()
    try:
        with AudioStream(ten_minutes, max_seconds=1800) as audio:
            total = 0
            while (piece := audio.read(30)).size:
                total += piece.size
                del piece
        assert total == 600 * SAMPLE_RATE
        assert tracemalloc.get_traced_memory()[1] < 8 * 2**20
        with AudioStream(just_over, max_seconds=LIMIT_S) as audio:
            with pytest.raises(AudioTooLong):
                while audio.read(30).size:
                    pass
            assert LIMIT_S * SAMPLE_RATE < audio.samples_read < (LIMIT_S + 0.1) * SAMPLE_RATE
    finally:
        tracemalloc.stop()


def test_a_piece_ends_in_the_quietest_moment_of_its_last_seconds():
    audio = np.full(30 * SAMPLE_RATE, 0.5, dtype=np.float32)
    audio[27 * SAMPLE_RATE: 27 * SAMPLE_RATE + SAMPLE_RATE // 5] = 0.0  # 200 ms pause at 27 s
    cut = quietest_cut(audio, 5 * SAMPLE_RATE)
    assert 27 * SAMPLE_RATE < cut < 27 * SAMPLE_RATE + SAMPLE_RATE // 5
    # A pause before the searched span is not taken: the piece ends in its last 5 s.
    audio[27 * SAMPLE_RATE:] = 0.5
    audio[20 * SAMPLE_RATE: 21 * SAMPLE_RATE] = 0.0
    assert quietest_cut(audio, 5 * SAMPLE_RATE) >= 25 * SAMPLE_RATE


@pytest.mark.slow  # large data: transcribes a long file
def test_a_long_file_does_not_make_a_short_one_wait_for_it(busy):
    """Two and a half minutes of speech (5 pieces) are uploaded first; the 11 s clip sent a second
    later is served between two pieces, before the long file is done, and both transcripts are right."""
    long_file = opus(speech(150))
    answers: dict[str, tuple[float, httpx.Response]] = {}
    started = time.monotonic()

    def send(name: str, file: bytes, filename: str) -> None:
        response = post(busy, file, filename, timeout=300,
                        data={"response_format": "verbose_json", "timestamp_granularities[]": "word"})
        answers[name] = (time.monotonic() - started, response)

    long_upload = threading.Thread(target=send, args=("long", long_file, "long.ogg"))
    long_upload.start()
    time.sleep(1.0)
    send("short", wav(jfk()), "jfk.wav")
    long_upload.join()
    (short_done, short), (long_done, long) = answers["short"], answers["long"]
    assert short.status_code == 200 and long.status_code == 200, (short.text, long.text)
    assert short_done < long_done, f"the clip waited for the long file: {short_done:.1f} s vs {long_done:.1f} s"
    assert words(short.json()["text"]) == words(JFK)
    body = long.json()
    assert abs(body["duration"] - 150) < 0.1
    assert wer(speech_reference(150), words(body["text"])) < 0.1
    for timed in (body["segments"], body["words"]):
        starts = [item["start"] for item in timed]
        assert starts == sorted(starts) and 140 < starts[-1] <= 150, "times run on across the pieces"


# --- 3. clients that leave ---------------------------------------------------------------------

def test_clients_that_leave_give_up_their_places_and_their_passes_stop(busy):
    """Three 10-minute uploads fill the worker and the queue (a fourth is refused with 503); once
    their clients hang up, the queue is empty, the engine goes idle within a piece, and a new
    upload is served."""
    body = multipart(opus(speech(600)), "long.ogg")
    leaving = []
    for _ in range(3):
        sock = connect(busy)
        sock.sendall(head(busy, len(body)) + body)
        leaving.append(sock)
    try:
        wait_until(lambda: metric(busy, "stt_queue_depth") == 2, 20, "the three uploads to be admitted")
        refused = post(busy, wav(jfk()), "jfk.wav")
        openai_error(refused, 503, "overloaded")
        assert int(refused.headers["retry-after"]) >= 1
    finally:
        for sock in leaving:
            sock.close()
    wait_until(lambda: metric(busy, "stt_queue_depth") == 0, 3, "the queue to empty")

    def engine_idle() -> bool:
        before = cpu_seconds(busy.process.pid)
        time.sleep(1.0)
        return cpu_seconds(busy.process.pid) - before < 0.25

    # The three files are over a minute of engine time; a piece is about 1.5 s (more on a loaded host).
    wait_until(engine_idle, 30, "the engine to stop transcribing for clients that left")
    r = post(busy, wav(jfk()), "jfk.wav")
    assert r.status_code == 200 and words(r.json()["text"]) == words(JFK)


# --- 4. headers --------------------------------------------------------------------------------

def test_no_cross_origin_access_by_default(guarded):
    r = httpx.get(guarded.url + "/v1/models", headers={**guarded.headers, "Origin": APP_ORIGIN})
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers
    preflight = httpx.options(guarded.url + URL, headers={"Origin": APP_ORIGIN, "Access-Control-Request-Method": "POST"})
    assert "access-control-allow-origin" not in preflight.headers
    openai_error(preflight, 405, None)


def test_a_configured_origin_gets_cors_and_another_does_not(busy):
    preflight = httpx.options(busy.url + URL, headers={"Origin": APP_ORIGIN, "Access-Control-Request-Method": "POST",
                                                       "Access-Control-Request-Headers": "authorization"})
    assert preflight.status_code == 200 and preflight.headers["access-control-allow-origin"] == APP_ORIGIN
    r = httpx.get(busy.url + "/v1/models", headers={**busy.headers, "Origin": APP_ORIGIN})
    assert r.headers["access-control-allow-origin"] == APP_ORIGIN
    other = httpx.get(busy.url + "/v1/models", headers={**busy.headers, "Origin": "https://app.example.org"})
    assert other.status_code == 200 and "access-control-allow-origin" not in other.headers


def test_the_server_header_names_no_framework_or_version(guarded):
    answers = [httpx.get(guarded.url + "/health").headers["server"],
               httpx.get(guarded.url + "/v1/models").headers["server"],  # 401
               httpx.get(guarded.url + "/nowhere").headers["server"]]
    # A request aiohttp's parser refuses never reaches the application.
    with connect(guarded) as sock:
        sock.sendall(b"GARBAGE\r\n\r\n")
        malformed = reply(sock, timeout=10)
    assert malformed.startswith(b"HTTP/1.0 400")
    answers.append(re.search(rb"\r\nServer: ([^\r]*)\r\n", malformed).group(1).decode())
    assert answers == ["speech-server"] * 4


@pytest.mark.parametrize("path", ["/", "/demo"])
def test_the_demo_page_runs_only_its_own_code_and_cannot_be_framed(guarded, path):
    r = httpx.get(guarded.url + path)
    assert r.status_code == 200 and r.headers["content-type"] == "text/html; charset=utf-8"
    assert r.headers["x-frame-options"] == "DENY" and r.headers["referrer-policy"] == "no-referrer"
    policy = dict(d.strip().split(" ", 1) for d in r.headers["content-security-policy"].split(";"))
    script = re.search(r"<script>(.*?)</script>", r.text, re.DOTALL).group(1)
    style = re.search(r"<style>(.*?)</style>", r.text, re.DOTALL).group(1)

    def sha256(text: str) -> str:
        return f"'sha256-{base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()}'"

    assert policy == {
        "default-src": "'none'",
        "script-src": f"{sha256(script)} blob:",  # the page's own script, and the worklet it builds
        "style-src": sha256(style),
        "img-src": "data:",
        "connect-src": "'self'",
        "base-uri": "'none'",
        "form-action": "'none'",
        "frame-ancestors": "'none'",
    }


# --- 5. limits that hold -----------------------------------------------------------------------

def test_a_declared_length_past_the_limit_is_refused_unread_and_one_at_the_limit_is_read(guarded):
    limit = 15 * 1024 * 1024 + 64 * 1024  # STT_MAX_FILE_BYTES and room for the form around the file
    # No body is sent: a 413 rather than a 408 shows it was refused before reading.
    with connect(guarded) as sock:
        sock.sendall(head(guarded, limit + 1))
        refused = reply(sock, timeout=10)
    assert refused.startswith(b"HTTP/1.1 413"), refused[:200]
    assert b'"code": "file_too_large"' in refused
    # At the limit the server waits for the body, and drops it only when nothing comes.
    with connect(guarded) as sock:
        sock.sendall(head(guarded, limit))
        assert reply(sock, timeout=30).startswith(b"HTTP/1.1 408")
    with connect(guarded) as sock:
        sock.sendall(head(guarded, 200 * 2**20))
        assert reply(sock, timeout=10).startswith(b"HTTP/1.1 413")


def test_the_servers_logged_no_error_and_no_lost_task(guarded, busy):
    """Every path above ends its tasks: nothing logged an error, a traceback or a pending task."""
    for server in (guarded, busy):
        port = server.url.rsplit(":", 1)[1]
        text = (Path(server.env["DATA_DIR"]) / f"stt-{port}.log").read_text()
        for sign in ("Traceback", "ERROR", "never retrieved", "was destroyed but it is pending"):
            assert sign not in text, text[-3000:]
