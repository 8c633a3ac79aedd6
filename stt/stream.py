"""WebSocket /v1/audio/stream (beta): real-time transcription sessions over the shared engine.

Per session: ``config`` → binary PCM16 frames → ``eof``; the server answers ``partial`` and
``final`` frames as the confirmation policy (stt.streaming) confirms words, then one ``result``
and a normal close. A malformed or unknown frame gets an ``error`` frame and the session stays
usable. Passes run in the engine pool, one at a time per session, never on the event loop.
"""
from __future__ import annotations

import asyncio
import json
import logging

from aiohttp import WSMsgType, web

from .auth import authenticate
from .resample import MAX_RATE, MIN_RATE, PcmStream
from .state import STATE
from .streaming import StreamingTranscriber

log = logging.getLogger("stt.stream")

# Close codes of the RFC 6455 registry: the server is full; a pass failed.
TRY_AGAIN_LATER = 1013
INTERNAL_ERROR = 1011
MAX_FRAME_BYTES = 1024 * 1024


async def stream(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    await authenticate(request, state, query_token=True)  # refused at the handshake: 401 / 403 / 429
    ws = web.WebSocketResponse(heartbeat=30.0, max_msg_size=MAX_FRAME_BYTES)
    await ws.prepare(request)
    if state.streams >= state.settings.stt_max_streams:
        await _error(ws, "The server is serving as many real-time sessions as it can; retry later.")
        await ws.close(code=TRY_AGAIN_LATER, message=b"at capacity")
        return ws
    state.streams += 1
    try:
        await Session(ws, state).run()
    finally:
        state.streams -= 1
    return ws


class Session:
    def __init__(self, ws: web.WebSocketResponse, state):
        self.ws, self.state = ws, state
        self.pcm: PcmStream | None = None
        self.policy: StreamingTranscriber | None = None
        self.running: asyncio.Task | None = None

    async def run(self) -> None:
        try:
            async for message in self.ws:
                if message.type == WSMsgType.TEXT:
                    if await self._on_text(message.data):
                        return
                elif message.type == WSMsgType.BINARY:
                    await self._on_audio(message.data)
                elif message.type == WSMsgType.ERROR:
                    return
        finally:
            if self.running is not None and not self.running.done():
                self.running.cancel()

    async def _on_text(self, data: str) -> bool:
        """Handles a control frame; True once the session has ended."""
        try:
            frame = json.loads(data)
        except ValueError:
            await _error(self.ws, "A text frame must be JSON: {\"type\": \"config\" | \"eof\", ...}.")
            return False
        kind = frame.get("type") if isinstance(frame, dict) else None
        if kind == "config":
            await self._configure(frame)
        elif kind == "eof":
            if self.policy is None:
                await _error(self.ws, "Send a config frame and audio before eof.")
                return False
            await self._finish()
            return True
        else:
            await _error(self.ws, f"Unknown frame type {kind!r}: expected config or eof.")
        return False

    async def _configure(self, frame: dict) -> None:
        if self.policy is not None:
            await _error(self.ws, "The stream is already configured; config may be sent once, before audio.")
            return
        rate = frame.get("sample_rate", 16_000)
        if not isinstance(rate, int) or isinstance(rate, bool) or not MIN_RATE <= rate <= MAX_RATE:
            await _error(self.ws, f"sample_rate must be an integer from {MIN_RATE} to {MAX_RATE} (Hz).")
            return
        self.pcm = PcmStream(rate)
        self.policy = StreamingTranscriber(self.state.models.get_loaded_default())

    async def _on_audio(self, data: bytes) -> None:
        if self.policy is None:
            await _error(self.ws, "Audio arrived before the config frame; it was dropped.")
            return
        self.policy.add_audio(self.pcm.push(data))
        self._maybe_pass()

    def _maybe_pass(self) -> None:
        if (self.running is None or self.running.done()) and self.policy.due():
            self.running = asyncio.create_task(self._pass())

    async def _pass(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            update = await loop.run_in_executor(self.state.engine, self.policy.step)
        except Exception:
            log.exception("a streaming pass failed")
            await _error(self.ws, "A transcription pass failed; the session goes on.")
            return
        if update.final:
            await _send(self.ws, {"type": "final", "text": update.final})
        await _send(self.ws, {"type": "partial", "text": update.partial})
        # Audio that arrived during the pass may already make the next one due.
        self._maybe_pass()

    async def _finish(self) -> None:
        if self.running is not None:
            await asyncio.shield(self.running)
        self.policy.add_audio(self.pcm.flush())
        loop = asyncio.get_running_loop()
        try:
            result = await loop.run_in_executor(self.state.engine, self.policy.finish)
        except Exception:
            # The upgrade is done: an HTTP 500 can no longer be sent, so say it in the stream.
            log.exception("the last pass of a stream failed")
            await _error(self.ws, "The final transcription pass failed; the result is lost.")
            await self.ws.close(code=INTERNAL_ERROR, message=b"transcription failed")
            return
        await _send(self.ws, {"type": "result", "text": result.text, "language": result.language,
                              "word_confidences": result.word_confidences})
        await self.ws.close()


async def _send(ws: web.WebSocketResponse, frame: dict) -> None:
    if not ws.closed:
        await ws.send_json(frame)


async def _error(ws: web.WebSocketResponse, message: str) -> None:
    await _send(ws, {"type": "error", "message": message})
