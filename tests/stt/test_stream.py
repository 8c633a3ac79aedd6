"""WebSocket /v1/audio/stream: the protocol, its state table, and the LocalAgreement invariants,
against the real server and engine."""
from __future__ import annotations

import asyncio

import aiohttp
import numpy as np
import pytest

from tests.support.speech import JFK, MAX_WER, jfk_at, pcm16, wer, words
from tests.support.speech_server import make_key, start_stt, stop_stt
from tests.support.streams import PATH, run, session


def texts(frames, kind):
    return [f["text"] for _, f in frames[kind]]


def check_invariants(frames) -> str:
    assert len(frames["result"]) == 1 and frames["error"] == [], frames["error"]
    result = frames["result"][0][1]
    confirmed = " ".join(t for t in texts(frames, "final") if t)
    assert result["text"].startswith(confirmed), (confirmed, result["text"])
    assert [w["word"] for w in result["word_confidences"]] == result["text"].split()
    assert all(set(w) == {"word", "confidence"} for w in result["word_confidences"])
    assert set(result) == {"type", "text", "word_confidences", "language"}
    assert all(0 <= w["confidence"] <= 1 for w in result["word_confidences"])
    assert frames["close"] == 1000
    return result["text"]


@pytest.fixture(scope="module")
def server(tmp_path_factory, converted_model):
    # The per-credential bound is tested on its own (test_stream_limits): here the tests share a key.
    server = start_stt(tmp_path_factory.mktemp("stream"), converted_model, STT_MAX_STREAMS=3,
                       STT_STREAMS_PER_CREDENTIAL=8)
    yield server
    stop_stt(server)


# --- the LocalAgreement invariants on real speech ----------------------------------------------

def test_real_time_stream_confirms_words_before_eof(server):
    frames = run(session(server.url, server.token, jfk_at(16000)))
    text = check_invariants(frames)
    assert wer(words(JFK), words(text)) <= MAX_WER, text
    assert frames["result"][0][1]["language"] == "english"
    # Words are confirmed while the audio still flows, not held back until eof. (How many depends
    # on how fast the passes run on this machine: the policy's share is tested in test_streaming.)
    before_eof = words(" ".join(f["text"] for at, f in frames["final"] if at < frames["eof_at"]))
    assert before_eof, "no final before eof"
    assert any(texts(frames, "partial")), "no partial frame with text"
    # Passes run while the audio flows, and never more often than one per 500 ms of new audio; a
    # loaded machine only makes them rarer.
    during = [at for at, _ in frames["partial"] if at < frames["eof_at"]]
    assert 2 <= len(during) <= len(jfk_at(16000)) / 2 / 16000 / 0.5 + 1, len(during)


@pytest.mark.slow  # real time; test_real_time_stream_confirms_words_before_eof stays in the default run
def test_a_pause_confirms_the_whole_utterance_before_eof(server):
    # A speaker who stops talking sees every word become final without ending the stream. The
    # pause lasts until the server has settled, within 20 s: a pass takes longer on a loaded
    # machine, and the policy itself is tested on a scripted clock in test_streaming.
    frames = run(session(server.url, server.token, jfk_at(16000), settle_s=20))
    text = check_invariants(frames)
    assert " ".join(f["text"] for at, f in frames["final"] if f["text"] and at < frames["eof_at"]) == text
    assert wer(words(JFK), words(text)) <= MAX_WER, text


def test_faster_than_real_time_at_the_default_sample_rate(server):
    # No sample_rate in the config: 16 kHz audio must be taken as it is.
    frames = run(session(server.url, server.token, jfk_at(16000), speed=4, send_rate=False))
    assert wer(words(JFK), words(check_invariants(frames))) <= MAX_WER


# 8 kHz is telephone audio: without the upper half of the voice's band, tiny.en hears "Americans,
# ask" as "America asked" or not depending on where the passes cut, which a loaded machine moves.
# Audio taken at the wrong rate would be half or twice the speed, far beyond these bounds; the
# resampling itself is checked sample for sample in test_resample.
@pytest.mark.parametrize(("rate", "max_wer"), [(8000, 0.25), (44100, MAX_WER)])
def test_other_sample_rates_are_resampled(server, rate, max_wer):
    frames = run(session(server.url, server.token, jfk_at(rate), rate=rate, speed=2))
    assert wer(words(JFK), words(check_invariants(frames))) <= max_wer


def test_odd_byte_counts_are_reassembled(server):
    frames = run(session(server.url, server.token, jfk_at(16000), chunk_bytes=3201, speed=3))
    assert wer(words(JFK), words(check_invariants(frames))) <= MAX_WER


def test_silence_gives_no_text_and_does_not_end_the_session(server):
    silence = pcm16(np.zeros(16000 * 12, dtype=np.float32))
    frames = run(session(server.url, server.token, silence, speed=3))
    assert check_invariants(frames) == ""
    assert [t for t in texts(frames, "final") if t] == []


@pytest.mark.slow  # real time, twice
def test_two_concurrent_sessions(server):
    async def both():
        return await asyncio.gather(session(server.url, server.token, jfk_at(16000)),
                                    session(server.url, server.token, jfk_at(44100), rate=44100))
    for frames in run(both()):
        assert wer(words(JFK), words(check_invariants(frames))) <= MAX_WER


# --- the protocol and its state table ----------------------------------------------------------

async def exchange(url: str, path_query: str, frames_to_send: list, *, headers=None) -> list:
    """Sends the frames in order, then collects every frame the server sends until it closes."""
    received = []
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(f"{url.replace('http', 'ws')}{path_query}", headers=headers) as ws:
            for frame in frames_to_send:
                await (ws.send_bytes(frame) if isinstance(frame, bytes) else ws.send_str(frame))
            while True:
                message = await ws.receive(timeout=60)
                if message.type != aiohttp.WSMsgType.TEXT:
                    break
                received.append(message.json())
    return received


@pytest.mark.parametrize("query, headers", [("", None), ("?token=vak_nope", None),
                                            ("", {"Authorization": "Bearer vat_nope"})])
def test_handshake_without_a_valid_key_is_refused_with_401(server, query, headers):
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        run(exchange(server.url, PATH + query, [], headers=headers))
    assert refused.value.status == 401


def test_an_api_key_opens_a_stream_in_the_query_or_the_header(server):
    owner = server.admin("bootstrap", "--workspace", "keys", "--email", "keys@example.com")
    key = make_key(server.env, owner)
    for path, headers in ((f"{PATH}?token={key}", None), (PATH, {"Authorization": f"Bearer {key}"})):
        got = run(exchange(server.url, path, ['{"type": "config"}', '{"type": "eof"}'], headers=headers))
        assert [f["type"] for f in got] == ["result"]


def test_a_key_without_speech_transcribe_is_refused_at_the_handshake_with_403(server):
    owner = server.admin("bootstrap", "--workspace", "noperm", "--email", "noperm@example.com")
    key = make_key(server.env, owner, permissions=["calls:read"])
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        run(exchange(server.url, f"{PATH}?token={key}", []))
    assert refused.value.status == 403


def test_the_handshake_carries_the_rate_limit_headers(server):
    async def handshake_headers():
        async with aiohttp.ClientSession() as http:
            async with http.ws_connect(f"{server.url.replace('http', 'ws')}{PATH}?token={server.token}") as ws:
                headers = dict(ws._response.headers)
                await ws.send_str('{"type": "eof"}')
                return headers
    headers = run(handshake_headers())
    assert "RateLimit-Limit" in headers and "RateLimit-Remaining" in headers


def test_bearer_header_is_accepted(server):
    got = run(exchange(server.url, PATH, ['{"type": "config"}', '{"type": "eof"}'],
                       headers={"Authorization": f"Bearer {server.token}"}))
    assert got[-1]["type"] == "result" and got[-1]["text"] == ""


@pytest.mark.parametrize("bad", ['not json', '[1, 2]', '{"no": "type"}', '{"type": "dance"}',
                                 '{"type": "config", "sample_rate": 7999}', '{"type": "config", "sample_rate": 48001}',
                                 '{"type": "config", "sample_rate": "16000"}', '{"type": "config", "sample_rate": true}'])
def test_a_malformed_frame_gets_an_error_and_the_session_stays_usable(server, bad):
    got = run(exchange(server.url, f"{PATH}?token={server.token}",
                       [bad, '{"type": "config", "sample_rate": 8000}', pcm16(np.zeros(8000, np.float32)),
                        '{"type": "eof"}']))
    # One error: the bad frame did not configure the session, so the good config was taken.
    assert [f["type"] for f in got if f["type"] != "partial"] == ["error", "result"] and got[0]["message"]


@pytest.mark.parametrize("rate", [8000, 48000])
def test_sample_rate_bounds_are_accepted(server, rate):
    got = run(exchange(server.url, f"{PATH}?token={server.token}",
                       [f'{{"type": "config", "sample_rate": {rate}}}', '{"type": "eof"}']))
    assert [f["type"] for f in got] == ["result"]


def test_audio_before_config_is_an_error(server):
    got = run(exchange(server.url, f"{PATH}?token={server.token}",
                       [pcm16(np.zeros(1600, np.float32)), '{"type": "config"}', '{"type": "eof"}']))
    assert got[0]["type"] == "error" and "config" in got[0]["message"]
    assert got[-1]["type"] == "result"


def test_eof_before_config_and_a_second_config_are_errors(server):
    got = run(exchange(server.url, f"{PATH}?token={server.token}",
                       ['{"type": "eof"}', '{"type": "config"}', '{"type": "config"}', '{"type": "eof"}']))
    assert [f["type"] for f in got] == ["error", "error", "result"]


def test_a_session_beyond_capacity_is_refused_at_its_config_with_an_error_frame(tmp_path, converted_model):
    full = start_stt(tmp_path, converted_model, STT_MAX_STREAMS=1)
    try:
        async def scenario():
            async with aiohttp.ClientSession() as http:
                url = f"{full.url.replace('http', 'ws')}{PATH}?token={full.token}"
                async with http.ws_connect(url) as first:
                    await first.send_json({"type": "config"})
                    async with http.ws_connect(url) as second:
                        await second.send_json({"type": "config"})
                        refused = await second.receive_json(timeout=10)
                        await second.receive(timeout=10)
                        code = second.close_code
                    await first.send_json({"type": "eof"})
                    result = await first.receive_json(timeout=30)
            return refused, code, result
        refused, code, result = run(scenario())
        assert refused["type"] == "error" and "retry" in refused["message"] and code == 1013
        assert result["type"] == "result"
    finally:
        stop_stt(full)
