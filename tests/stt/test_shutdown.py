"""SIGTERM: the speech server stops taking connections, lets the uploads in flight finish, and
ends every open real-time session with the result of what it received and a 1001 close."""
from __future__ import annotations

import asyncio
import io
import signal
import wave

import aiohttp
import numpy as np

from tests.support.speech import FIXTURES, JFK, jfk_at, words
from tests.support.speech_server import start_stt, stop_stt
from tests.support.streams import PATH

GOING_AWAY = 1001


def ws_url(server) -> str:
    return f"{server.url.replace('http', 'ws')}{PATH}?token={server.token}"


async def exit_code(server, timeout: float) -> int | None:
    return await asyncio.to_thread(server.process.wait, timeout)


def test_a_live_session_gets_the_result_of_what_it_sent_and_1001(tmp_path, converted_model):
    server = start_stt(tmp_path, converted_model)
    try:
        async def scenario():
            async with aiohttp.ClientSession() as http, http.ws_connect(ws_url(server)) as ws:
                await ws.send_json({"type": "config"})
                audio, step = jfk_at(16000)[:16000 * 2 * 4], 3200  # the first 4 s, in real time
                for offset in range(0, len(audio), step):
                    await ws.send_bytes(audio[offset:offset + step])
                    await asyncio.sleep(0.1)
                server.process.send_signal(signal.SIGTERM)
                frames = []
                async with asyncio.timeout(60):
                    while (message := await ws.receive()).type == aiohttp.WSMsgType.TEXT:
                        frames.append(message.json())
                return frames, ws.close_code, await exit_code(server, 30)

        frames, code, exited = asyncio.run(scenario())
        results = [f for f in frames if f["type"] == "result"]
        assert len(results) == 1 and frames[-1] is results[0], frames
        # "And so my fellow Americans, ask not..." is what the first 4 s hold: it was all received.
        assert words(results[0]["text"])[:5] == words(JFK)[:5], results[0]
        assert code == GOING_AWAY
        assert exited is not None
    finally:
        if server.process.poll() is None:
            stop_stt(server)


def test_an_unconfigured_socket_is_closed_with_1001(tmp_path, converted_model):
    server = start_stt(tmp_path, converted_model)
    try:
        async def scenario():
            async with aiohttp.ClientSession() as http, http.ws_connect(ws_url(server)) as ws:
                await asyncio.sleep(0.3)
                server.process.send_signal(signal.SIGTERM)
                async with asyncio.timeout(30):
                    message = await ws.receive()
                return message.type, ws.close_code, await exit_code(server, 30)

        kind, code, exited = asyncio.run(scenario())
        assert kind == aiohttp.WSMsgType.CLOSE and code == GOING_AWAY
        assert exited is not None
    finally:
        if server.process.poll() is None:
            stop_stt(server)


def long_wav(seconds: int) -> bytes:
    """jfk.wav repeated to ``seconds``: a file whose transcription takes a few seconds."""
    with wave.open(str(FIXTURES / "jfk.wav")) as w:
        rate, frames = w.getframerate(), w.readframes(w.getnframes())
    samples = np.frombuffer(frames, "<i2")
    audio = np.tile(samples, seconds * rate // samples.size + 1)[:seconds * rate]
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(audio.tobytes())
    return out.getvalue()


def test_an_upload_in_flight_is_answered_before_the_server_exits(tmp_path, converted_model):
    server = start_stt(tmp_path, converted_model)
    try:
        async def scenario():
            async with aiohttp.ClientSession(headers=server.headers) as http:
                form = aiohttp.FormData()
                form.add_field("file", long_wav(60), filename="long.wav", content_type="audio/wav")
                form.add_field("model", "svc-stt")

                async def upload():
                    async with http.post(server.url + "/v1/audio/transcriptions", data=form) as response:
                        return response.status, await response.json()

                answer = asyncio.create_task(upload())
                await asyncio.sleep(1.0)  # the body is in and the engine at work
                assert not answer.done()
                server.process.send_signal(signal.SIGTERM)
                status, body = await asyncio.wait_for(answer, 60)
                return status, body, await exit_code(server, 30)

        status, body, exited = asyncio.run(scenario())
        assert status == 200, body
        assert words(body["text"])[:8] == words(JFK)[:8]
        assert exited is not None
    finally:
        if server.process.poll() is None:
            stop_stt(server)
