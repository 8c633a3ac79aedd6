"""What keeps a real-time session from holding the server: deadlines, pace, slots, rechecks.

The rules first, on a scripted clock (stt.stream_limits); then each one enforced by a real speech
server started with small settings, over real sockets.
"""
from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import struct
import subprocess
import sys
import time
from urllib.parse import urlsplit

import aiohttp
import numpy as np
import pytest

from stt.stream_limits import Expiry, Limits, SessionClock
from tests.support.servers import ROOT
from tests.support.speech import JFK, MAX_WER, jfk_at, pcm16, wer, words
from tests.support.speech_server import make_key, start_stt, stop_stt
from tests.support.streams import PATH

LIMITS = Limits(config_timeout=10.0, idle_timeout=30.0, max_session=3600.0, realtime_margin=10.0, recheck=5.0)


# --- the rules, on a scripted clock ------------------------------------------------------------

def test_a_session_must_configure_within_the_config_timeout():
    clock = SessionClock(LIMITS, opened=100.0)
    assert clock.expired(109.99) is None
    assert clock.expired(110.0) is Expiry.CONFIG
    clock.configure(109.0)
    assert clock.expired(110.0) is None


def test_a_configured_session_must_send_audio_within_the_idle_timeout():
    clock = SessionClock(LIMITS, opened=0.0)
    clock.configure(1.0)
    assert clock.expired(30.99) is None and clock.expired(31.0) is Expiry.IDLE
    clock.add_audio(0.1, now=20.0)
    assert clock.expired(49.99) is None and clock.expired(50.0) is Expiry.IDLE


def test_a_session_ends_at_its_maximum_length_from_its_config_frame_even_while_audio_flows():
    clock = SessionClock(LIMITS, opened=0.0)
    clock.configure(5.0)
    now = 5.0
    while now < 3604.9:
        now += 0.1
        clock.add_audio(0.1, now)
        assert clock.expired(now) is None
    assert clock.expired(3605.0) is Expiry.SESSION


def test_audio_may_run_ahead_of_real_time_by_the_margin_and_no_further():
    clock = SessionClock(LIMITS, opened=0.0)
    assert clock.hold(0.0) == 0.0  # unconfigured: nothing to pace
    clock.configure(0.0)
    clock.add_audio(10.0, now=0.0)
    assert clock.hold(0.0) == 0.0  # exactly the margin ahead
    clock.add_audio(0.5, now=0.0)
    assert clock.hold(0.0) == pytest.approx(0.5)  # just past it: wait until real time catches up
    assert clock.hold(0.5) == 0.0
    clock.add_audio(3600.0, now=0.5)
    assert clock.hold(0.5) == pytest.approx(3600.0)


def test_holding_back_a_client_that_runs_ahead_is_not_idleness():
    clock = SessionClock(LIMITS, opened=0.0)
    clock.configure(0.0)
    clock.add_audio(100.0, now=0.0)  # caught up at 90 s: until then its next frames wait unread
    assert clock.expired(119.99) is None
    assert clock.expired(120.0) is Expiry.IDLE


def test_the_credential_is_checked_again_every_recheck_interval():
    clock = SessionClock(LIMITS, opened=0.0)
    assert not clock.recheck_due(4.99) and clock.recheck_due(5.0)
    clock.rechecked(5.2)
    assert not clock.recheck_due(10.19) and clock.recheck_due(10.2)


def test_the_next_event_is_the_soonest_deadline_or_recheck():
    clock = SessionClock(LIMITS, opened=0.0)
    assert clock.next_event(0.0) == 5.0  # the recheck before the config deadline
    clock.rechecked(6.0)
    assert clock.next_event(6.0) == 4.0  # the config deadline at 10 s, before the recheck at 11 s
    assert clock.next_event(11.0) == 0.0


# --- a client over real sockets ----------------------------------------------------------------

def ws_url(server, token: str) -> str:
    return f"{server.url.replace('http', 'ws')}{PATH}?token={token}"


async def until_closed(ws, timeout: float = 20) -> list[dict]:
    """Every frame the server sends until it closes (within ``timeout`` in all); ws.close_code then
    says how."""
    frames = []
    async with asyncio.timeout(timeout):
        while True:
            message = await ws.receive()
            if message.type != aiohttp.WSMsgType.TEXT:
                return frames
            frames.append(message.json())


async def open_configured(http, server, token: str):
    ws = await http.ws_connect(ws_url(server, token))
    await ws.send_json({"type": "config"})
    return ws


async def send_at_once(ws, audio: bytes) -> None:
    """All of ``audio`` as fast as the socket takes it, in frames of 100 ms at 16 kHz."""
    for offset in range(0, len(audio), 3200):
        await ws.send_bytes(audio[offset:offset + 3200])


async def all_at_once_then_eof(server, audio: bytes) -> tuple[list[dict], int | None, float]:
    """A configured session sent ``audio`` at once, then eof: its frames, its close code, and the
    seconds from the first byte sent to the close."""
    async with aiohttp.ClientSession() as http:
        async with await open_configured(http, server, server.token) as ws:
            sent = time.monotonic()
            await send_at_once(ws, audio)
            await ws.send_json({"type": "eof"})
            frames = await until_closed(ws, timeout=60)
            return frames, ws.close_code, time.monotonic() - sent


async def eof_result(ws) -> dict:
    await ws.send_json({"type": "eof"})
    frames = await until_closed(ws)
    assert frames[-1]["type"] == "result" and ws.close_code == 1000, frames
    return frames[-1]


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def server_with(tmp_path, converted_model):
    """A speech server started with the given settings, stopped after the test."""
    started = []

    def start(**env):
        data_dir = tmp_path / f"s{len(started)}"
        data_dir.mkdir()
        started.append(start_stt(data_dir, converted_model, **env))
        return started[-1]
    yield start
    for server in started:
        stop_stt(server)


# --- deadlines ---------------------------------------------------------------------------------

def test_a_socket_without_config_is_closed_at_the_config_timeout(server_with):
    server = server_with(STT_CONFIG_TIMEOUT_S=2)

    async def scenario():
        async with aiohttp.ClientSession() as http:
            # Configured just inside the timeout: the session lives on past it.
            async with http.ws_connect(ws_url(server, server.token)) as ws:
                await asyncio.sleep(1.2)
                await ws.send_json({"type": "config"})
                await asyncio.sleep(1.5)
                result = await eof_result(ws)
            opened = time.monotonic()
            async with http.ws_connect(ws_url(server, server.token)) as ws:
                frames = await until_closed(ws)
                return result, frames, ws.close_code, time.monotonic() - opened

    result, frames, code, after = run(scenario())
    assert result["text"] == ""
    assert [f["type"] for f in frames] == ["error"] and "config" in frames[0]["message"]
    assert code == 1008 and 1.9 <= after <= 6, after


def test_a_session_without_audio_is_closed_at_the_idle_timeout(server_with):
    server = server_with(STT_IDLE_TIMEOUT_S=1.5)
    frame = pcm16(np.zeros(1600, np.float32))

    async def scenario():
        async with aiohttp.ClientSession() as http:
            # Audio every second, for three seconds: never idle for 1.5 s.
            async with await open_configured(http, server, server.token) as ws:
                for _ in range(3):
                    await asyncio.sleep(1.0)
                    await ws.send_bytes(frame)
                result = await eof_result(ws)
            async with await open_configured(http, server, server.token) as ws:
                await ws.send_bytes(frame)
                last_audio = time.monotonic()
                frames = await until_closed(ws)
                return result, frames, ws.close_code, time.monotonic() - last_audio

    result, frames, code, after = run(scenario())
    assert result["type"] == "result"
    assert [f["type"] for f in frames if f["type"] != "partial"] == ["error"] and "audio" in frames[-1]["message"]
    assert code == 1008 and 1.4 <= after <= 5, after


def test_the_maximum_session_length_ends_the_stream_with_its_result(server_with):
    server = server_with(STT_MAX_SESSION_S=4, STT_REALTIME_MARGIN_S=2)
    audio = jfk_at(16000)

    async def scenario():
        async with aiohttp.ClientSession() as http:
            async with await open_configured(http, server, server.token) as ws:
                configured = time.monotonic()
                # Eleven seconds of speech at once: the server paces it and ends the session at 4 s,
                # with about 6 s of it (4 s of real time and the 2 s margin) transcribed.
                await send_at_once(ws, audio)
                frames = await until_closed(ws)
                return frames, ws.close_code, time.monotonic() - configured

    frames, code, after = run(scenario())
    assert frames[-1]["type"] == "result" and code == 1000, (frames, code)
    assert [f for f in frames if f["type"] == "error"] == []
    heard = words(frames[-1]["text"])
    # The first words, and not the last ones: the audio past the limit was never transcribed.
    assert heard[:3] == ["and", "so", "my"] and "country" not in heard[-2:], heard
    assert 3.9 <= after <= 15, after


def test_the_maximum_session_length_is_given_as_the_close_reason(server_with):
    server = server_with(STT_MAX_SESSION_S=1)

    async def scenario():
        async with aiohttp.ClientSession() as http:
            async with await open_configured(http, server, server.token) as ws:
                await ws.send_bytes(pcm16(np.zeros(1600, np.float32)))
                message = None
                while message is None or message.type == aiohttp.WSMsgType.TEXT:
                    message = await ws.receive(timeout=10)
                return message.type, message.data, message.extra

    kind, code, reason = run(scenario())
    assert kind == aiohttp.WSMsgType.CLOSE and code == 1000 and reason == "maximum session length"


# --- pace --------------------------------------------------------------------------------------

@pytest.mark.slow  # real time
def test_audio_sent_at_once_is_consumed_no_faster_than_real_time_plus_the_margin(server_with):
    # A small idle timeout too: holding back a client that runs ahead does not count as idleness.
    server = server_with(STT_REALTIME_MARGIN_S=3, STT_IDLE_TIMEOUT_S=1.5)
    audio = jfk_at(16000)
    seconds = len(audio) / 2 / 16000

    frames, code, took = run(all_at_once_then_eof(server, audio))
    assert frames[-1]["type"] == "result" and code == 1000, frames
    assert wer(words(JFK), words(frames[-1]["text"])) <= MAX_WER, frames[-1]["text"]
    assert took >= seconds - 3 - 0.1, (took, seconds)
    # Passes went on while the server held the client back: finals came before the result.
    assert any(f["type"] == "final" and f["text"] for f in frames[:-1])


def test_audio_within_the_margin_is_not_held(server_with):
    server = server_with(STT_REALTIME_MARGIN_S=30)
    # Silence: no pass is needed, so the time taken is the server's reading alone.
    audio = pcm16(np.zeros(16000 * 20, np.float32))

    frames, _, took = run(all_at_once_then_eof(server, audio))
    assert frames[-1] == {"type": "result", "text": "", "language": "english", "word_confidences": []}
    # 20 s of audio within a 30 s margin is read at once; held back it would take 20 s.
    assert took < 10, took


# --- slots -------------------------------------------------------------------------------------

def test_an_unconfigured_socket_holds_no_stream_slot(server_with):
    server = server_with(STT_MAX_STREAMS=1)

    async def scenario():
        async with aiohttp.ClientSession() as http:
            async with http.ws_connect(ws_url(server, server.token)) as idle:
                async with await open_configured(http, server, server.token) as ws:
                    await ws.send_bytes(pcm16(np.zeros(1600, np.float32)))
                    result = await eof_result(ws)
                await idle.send_json({"type": "config"})
                second = await eof_result(idle)
            return result, second

    result, second = run(scenario())
    assert result["text"] == "" and second["text"] == ""


def test_a_credential_holds_at_most_its_share_of_open_sockets(server_with):
    server = server_with(STT_STREAMS_PER_CREDENTIAL=2, STT_MAX_STREAMS=4)
    owner = server.admin("bootstrap", "--workspace", "other", "--email", "other@example.com")
    other_key = make_key(server.env, owner)

    async def scenario():
        async with aiohttp.ClientSession() as http:
            first = await http.ws_connect(ws_url(server, server.token))
            second = await http.ws_connect(ws_url(server, server.token))
            async with http.ws_connect(ws_url(server, server.token)) as third:
                refused = await until_closed(third)
                refused_code = third.close_code
            # Another credential is not affected.
            async with await open_configured(http, server, other_key) as ws:
                other = await eof_result(ws)
            # Once one of the two ends, the credential may open another.
            await second.send_json({"type": "config"})
            await eof_result(second)
            async with await open_configured(http, server, server.token) as ws:
                again = await eof_result(ws)
            await first.close()
            return refused, refused_code, other, again

    refused, code, other, again = run(scenario())
    assert [f["type"] for f in refused] == ["error"] and "2 open streams" in refused[0]["message"]
    assert code == 1008
    assert other["type"] == again["type"] == "result"


class RawClient:
    """A WebSocket client on a bare socket, so that a test can reset the connection (RST) the way a
    crashed client or a dropped network does, without a close frame."""

    def __init__(self, server, token: str):
        address = urlsplit(server.url)
        self.sock = socket.create_connection((address.hostname, address.port), timeout=10)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {PATH}?token={token} HTTP/1.1\r\nHost: {address.netloc}\r\n"
                           f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(4096)
        assert head.startswith(b"HTTP/1.1 101"), head

    def send(self, payload: bytes | str) -> None:
        opcode = 0x1 if isinstance(payload, str) else 0x2
        data = payload.encode() if isinstance(payload, str) else payload
        mask = os.urandom(4)
        length = (struct.pack("!B", 0x80 | len(data)) if len(data) < 126 else
                  struct.pack("!BH", 0x80 | 126, len(data)) if len(data) < 65536 else
                  struct.pack("!BQ", 0x80 | 127, len(data)))
        masked = (np.frombuffer(data, np.uint8) ^ np.resize(np.frombuffer(mask, np.uint8), len(data))).tobytes()
        self.sock.sendall(struct.pack("!B", 0x80 | opcode) + length + mask + masked)

    def reset(self) -> None:
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()


@pytest.mark.parametrize("ahead", [False, True], ids=["live", "held-back"])
def test_a_reset_connection_frees_its_slot_within_a_second(server_with, ahead):
    server = server_with(STT_MAX_STREAMS=1, STT_REALTIME_MARGIN_S=1)
    client = RawClient(server, server.token)
    client.send('{"type": "config"}')
    # Held back: 4 s of audio at once against a 1 s margin, so the server is not reading when the
    # connection drops.
    speech = jfk_at(16000)[:3200]
    for _ in range(40 if ahead else 1):
        client.send(speech)

    async def attempt() -> tuple[list, int]:
        async with aiohttp.ClientSession() as http:
            async with await open_configured(http, server, server.token) as ws:
                await ws.send_json({"type": "eof"})
                return await until_closed(ws), ws.close_code

    time.sleep(0.5)
    assert run(attempt())[1] == 1013  # the slot is taken
    client.reset()
    time.sleep(1.0)
    frames, code = run(attempt())
    assert code == 1000 and frames[-1]["type"] == "result", (frames, code)


# --- the credential ----------------------------------------------------------------------------

_CHANGE_KEY = """
import json, sys
from datetime import timedelta
from core.settings import Settings
from models.identity.api_keys import delete_api_keys
from models.identity.tables import ApiKey
from models.identity.credentials import authenticate
from models.kernel.db import open_database, session, utcnow
args = json.loads(sys.argv[1])
settings = Settings.from_env()
open_database(settings.database_url, settings.data_dir)
with session():
    owner = authenticate(args["owner"])
    key_id = authenticate(args["key"]).credential_id
    if args["change"] == "deleted":
        assert delete_api_keys(owner, workspace_id=owner.workspace_id, ids=[key_id]) == 1
    elif args["change"] == "deactivated":
        ApiKey.update(is_active=False).where(ApiKey.id == key_id).execute()
    else:
        ApiKey.update(expires_at=utcnow() - timedelta(seconds=1)).where(ApiKey.id == key_id).execute()
"""


def change_key(server, owner_token: str, key: str, change: str) -> None:
    """Deletes (as the management API does, through the domain), deactivates or expires ``key``,
    from another process: what the management API on another host would do."""
    subprocess.run([sys.executable, "-c", _CHANGE_KEY, json.dumps({"owner": owner_token, "key": key, "change": change})],
                   env=server.env, cwd=ROOT, check=True, capture_output=True)


@pytest.mark.parametrize("change", ["deleted", "deactivated", "expired"])
def test_a_key_that_stops_being_valid_ends_its_open_streams_within_the_recheck_interval(server_with, change):
    server = server_with(STT_RECHECK_S=0.5)
    owner = server.admin("bootstrap", "--workspace", "k", "--email", "k@example.com")
    key = make_key(server.env, owner)
    frame = pcm16(np.zeros(1600, np.float32))

    async def scenario():
        async with aiohttp.ClientSession() as http:
            async with await open_configured(http, server, key) as ws:
                # Valid all along: live past several rechecks without a word from the server.
                for _ in range(15):
                    await ws.send_bytes(frame)
                    await asyncio.sleep(0.1)
                await asyncio.to_thread(change_key, server, owner["token"], key, change)
                changed = time.monotonic()
                received = []

                async def keep_streaming():
                    while not ws.closed:
                        await ws.send_bytes(frame)
                        await asyncio.sleep(0.1)

                streaming = asyncio.create_task(keep_streaming())
                received = await until_closed(ws, timeout=10)
                streaming.cancel()
                return received, ws.close_code, time.monotonic() - changed

    frames, code, after = run(scenario())
    errors = [f for f in frames if f["type"] == "error"]
    assert [f["type"] for f in frames if f["type"] != "partial"] == ["error"], frames
    assert code == 1008 and after <= 0.5 + 1.5, after
    assert {"deleted": "deleted", "deactivated": "inactive", "expired": "expired"}[change] in errors[0]["message"]


def test_a_session_counts_one_request_against_the_rate_limit_however_long_it_runs(server_with):
    server = server_with(STT_RECHECK_S=0.2)
    owner = server.admin("bootstrap", "--workspace", "r", "--email", "r@example.com")
    # The day's limit binds (the minute's is far above it), so that a minute that turns between
    # the two sessions does not refill what the header reports.
    key = make_key(server.env, owner, rate_limit=(1000, 100))

    async def remaining_after_session(seconds: float) -> int:
        async with aiohttp.ClientSession() as http:
            async with await open_configured(http, server, key) as ws:
                remaining = int(ws._response.headers["RateLimit-Remaining"])
                for _ in range(int(seconds * 10)):
                    await ws.send_bytes(pcm16(np.zeros(1600, np.float32)))
                    await asyncio.sleep(0.1)
                await eof_result(ws)
                return remaining

    first = run(remaining_after_session(2.0))  # about ten rechecks
    second = run(remaining_after_session(0.0))
    assert second == first - 1


# --- control frames ----------------------------------------------------------------------------

def nested(depth: int, kind: str) -> str:
    """A config frame whose extra field nests arrays or objects so that the frame is ``depth`` deep."""
    inner = depth - 1
    value = "[" * inner + "]" * inner if kind == "array" else '{"a":' * inner + "1" + "}" * inner
    return '{"type": "config", "extra": ' + value + "}"


@pytest.fixture(scope="module")
def stream_server(tmp_path_factory, converted_model):
    # A wide margin: a frame of 32 s of audio is read at once.
    server = start_stt(tmp_path_factory.mktemp("frames"), converted_model, STT_REALTIME_MARGIN_S=60)
    yield server
    stop_stt(server)


# What send_then_eof gives as the close code when the server dropped the connection while the
# client was still writing a frame: the server closes on a frame's header, and a close frame sent
# while the rest of a large frame is still arriving may be lost to the connection's reset.
DROPPED_MID_FRAME = -1


async def send_then_eof(server, frames: list) -> tuple[list, int | None]:
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(ws_url(server, server.token)) as ws:
            for frame in frames:
                try:
                    await (ws.send_str(frame) if isinstance(frame, str) else ws.send_bytes(frame))
                except ConnectionError:
                    return [], DROPPED_MID_FRAME
            return await until_closed(ws), ws.close_code


@pytest.mark.parametrize("kind", ["array", "object"])
def test_a_control_frame_nested_to_the_limit_is_read_and_one_level_deeper_is_an_error(stream_server, kind):
    from stt.stream import MAX_CONTROL_DEPTH
    at_limit, got_code = run(send_then_eof(stream_server, [nested(MAX_CONTROL_DEPTH, kind), '{"type": "eof"}']))
    assert [f["type"] for f in at_limit] == ["result"] and got_code == 1000
    deeper, got_code = run(send_then_eof(stream_server, [nested(MAX_CONTROL_DEPTH + 1, kind), '{"type": "config"}',
                                                         '{"type": "eof"}']))
    assert [f["type"] for f in deeper] == ["error", "result"] and "deep" in deeper[0]["message"], deeper
    assert got_code == 1000


@pytest.mark.parametrize("bomb", ["[" * 10_000 + "]" * 10_000, '{"a":' * 5_000 + "1" + "}" * 5_000],
                         ids=["arrays-10000-deep", "objects-5000-deep"])
def test_deeply_nested_json_gets_an_error_frame_and_the_session_stays_usable(stream_server, bomb):
    frames, code = run(send_then_eof(stream_server, [bomb, '{"type": "config"}', '{"type": "eof"}']))
    assert [f["type"] for f in frames] == ["error", "result"] and code == 1000, (frames, code)


def test_a_control_frame_over_its_size_limit_is_an_error_and_the_session_stays_usable(stream_server):
    from stt.stream import MAX_CONTROL_BYTES
    config = '{"type": "config"}'
    padded = config[:-1] + " " * (MAX_CONTROL_BYTES - len(config)) + "}"
    frames, code = run(send_then_eof(stream_server, [padded, '{"type": "eof"}']))
    assert [f["type"] for f in frames] == ["result"] and code == 1000
    frames, code = run(send_then_eof(stream_server, [padded + " ", config, '{"type": "eof"}']))
    assert [f["type"] for f in frames] == ["error", "result"] and "binary" in frames[0]["message"], frames


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_a_frame_over_one_mebibyte_closes_the_session_with_1009(stream_server, binary):
    from stt.stream import MAX_FRAME_BYTES
    over = b"\0" * (MAX_FRAME_BYTES + 1) if binary else " " * (MAX_FRAME_BYTES + 1)
    frames, code = run(send_then_eof(stream_server, ['{"type": "config"}', over]))
    assert code in (1009, DROPPED_MID_FRAME) and [f for f in frames if f["type"] == "result"] == []


def test_a_binary_frame_of_exactly_one_mebibyte_is_taken(stream_server):
    from stt.stream import MAX_FRAME_BYTES
    # 32 s of silence in one frame.
    frames, code = run(send_then_eof(stream_server, ['{"type": "config"}', b"\0" * MAX_FRAME_BYTES,
                                                     '{"type": "eof"}']))
    assert code == 1000 and frames[-1]["type"] == "result"
