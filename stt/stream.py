"""WebSocket /v1/audio/stream (beta): real-time transcription sessions over the shared engine.

Per session: ``config`` → binary PCM16 frames → ``eof``; the server answers ``partial`` and
``final`` frames as the confirmation policy (stt.streaming) confirms words, then one ``result``
and a normal close. A malformed or unknown frame gets an ``error`` frame and the session stays
usable. Passes run in the engine pool, one at a time per session, never on the event loop.

No client holds the server forever (the rules and their settings: stt.stream_limits):

- the handshake admits the credential (one request against its rate limit); a credential holds at
  most STT_STREAMS_PER_CREDENTIAL open sockets, past which a new one gets an ``error`` frame and
  close 1008;
- a session takes one of the STT_MAX_STREAMS slots at its ``config`` frame (an unconfigured socket
  holds none); when they are all taken the ``config`` gets an ``error`` frame and close 1013;
- no ``config`` in time, no audio in time, or a credential found deleted, deactivated, expired or
  without the permission at a recheck: an ``error`` frame and close 1008;
- the maximum session length ends the session as ``eof`` would: its ``result``, then close 1000
  with the reason "maximum session length";
- audio that runs ahead of real time by more than the margin is not read until real time catches
  up (backpressure: the client's sends block), so the session's passes come at a live pace.
- when the server stops (SIGTERM), every session ends as ``eof`` would: the audio received so far
  is transcribed within SHUTDOWN_TIMEOUT_S (past it the result holds the confirmed words only),
  then its ``result`` and close 1001.

A control (text) frame is at most MAX_CONTROL_BYTES and nests at most MAX_CONTROL_DEPTH deep, or it
gets an ``error`` frame; any frame over MAX_FRAME_BYTES is closed with 1009.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import time

import orjson
from aiohttp import WSMsgType, web

from models.kernel.errors import DomainError
from models.speech.customisation import Customisation

from . import usage
from .auth import authenticate, recheck
from .customisation import customised_text, customised_words
from .engine import Word
from .resample import MAX_RATE, MIN_RATE, PcmStream
from .state import STATE, State
from .stream_limits import Expiry, Limits, SessionClock
from .streaming import StreamingTranscriber

log = logging.getLogger("stt.stream")

# Close codes of the RFC 6455 registry.
GOING_AWAY = 1001
POLICY_VIOLATION = 1008
INTERNAL_ERROR = 1011
TRY_AGAIN_LATER = 1013
MAX_FRAME_BYTES = 1024 * 1024
# A control frame is a few dozen bytes; these bounds keep parsing it cheap and shallow.
MAX_CONTROL_BYTES = 16 * 1024
MAX_CONTROL_DEPTH = 16
# How often a session that holds back (does not read) looks whether its client is still there.
_PEER_POLL_S = 0.2
# ws.receive(timeout=0) would wait forever: the shortest wait for a deadline that is due now.
_MIN_WAIT_S = 0.001

_EXPIRED = {
    Expiry.CONFIG: ("No config frame arrived within {limit:g} s of opening the stream.", "config timeout"),
    Expiry.IDLE: ("No audio arrived for {limit:g} s; the stream was closed.", "idle timeout"),
}


async def stream(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    principal = await authenticate(request, state, query_token=True)  # refused at the handshake: 401 / 403 / 429
    credential = principal.credential_id
    limit = state.settings.stt_streams_per_credential
    # Counted before the first await, so that concurrent handshakes cannot all pass the check.
    admitted = state.sockets_by_credential.get(credential, 0) < limit
    if admitted:
        state.sockets_by_credential[credential] = state.sockets_by_credential.get(credential, 0) + 1
    try:
        ws = web.WebSocketResponse(heartbeat=30.0, max_msg_size=MAX_FRAME_BYTES + 1)
        await ws.prepare(request)
        if not admitted:
            await _error(ws, f"This credential already holds {limit} open streams, its limit; close one first.")
            await ws.close(code=POLICY_VIOLATION, message=b"too many streams for this credential")
            return ws
        session = Session(ws, request, state, await state.customisations.get(principal.workspace_id))
        state.sessions.add(session)
        try:
            await _serve(session)
        finally:
            state.sessions.discard(session)
            await usage.debit(principal, session.clock.audio_seconds, "stream")
        return ws
    finally:
        if admitted:
            _release_socket(state, credential)


async def _serve(session: Session) -> None:
    """Runs the session; a failure of its own ends it with 1011. The socket is upgraded by now, so
    an exception must not reach the request middleware, which would write an HTTP 500 into it."""
    try:
        await session.run()
    except Exception:
        log.exception("a real-time session failed")
        with contextlib.suppress(Exception):
            await _error(session.ws, "The session failed on the server; it was closed.")
            await session.ws.close(code=INTERNAL_ERROR, message=b"server error")


def _release_socket(state: State, credential: str) -> None:
    left = state.sockets_by_credential.get(credential, 1) - 1
    if left > 0:
        state.sockets_by_credential[credential] = left
    else:
        state.sockets_by_credential.pop(credential, None)


class Session:
    def __init__(self, ws: web.WebSocketResponse, request: web.Request, state: State, custom: Customisation):
        self.ws, self.request, self.state = ws, request, state
        self.custom = custom  # the workspace's vocabulary and speech filter, as the session began
        self.clock = SessionClock(Limits.from_settings(state.settings), time.monotonic())
        self.pcm: PcmStream | None = None
        self.policy: StreamingTranscriber | None = None
        self.running: asyncio.Task | None = None
        self.holds_slot = False
        self.ending = False  # the last pass, the result and the close are under way

    async def run(self) -> None:
        try:
            while not self.ws.closed:
                now = time.monotonic()
                if await self._enforce_limits(now):
                    return
                wait = max(self.clock.next_event(now), _MIN_WAIT_S)
                hold = self.clock.hold(now)
                if hold > 0:
                    if not await self._hold(min(hold, wait)):
                        return
                    continue
                try:
                    message = await self.ws.receive(timeout=wait)
                except TimeoutError:
                    continue  # a deadline or a recheck is due: the loop's head sees to it
                if message.type == WSMsgType.TEXT:
                    if await self._on_text(message.data):
                        return
                elif message.type == WSMsgType.BINARY:
                    await self._on_audio(message.data)
                else:
                    return  # closed, closing, or a protocol error that aiohttp has answered (1009, 1002)
        finally:
            if self.running is not None and not self.running.done():
                self.running.cancel()
            if self.holds_slot:
                self.state.streams -= 1
                self.holds_slot = False

    # --- the limits ----------------------------------------------------------------------------

    async def _enforce_limits(self, now: float) -> bool:
        """Ends the session when one of its deadlines has passed or its credential is no longer
        good; True once it has ended."""
        if self.ending:
            return False  # the session is ending already (a shutdown): nothing more to enforce
        expiry = self.clock.expired(now)
        if expiry is Expiry.SESSION:
            await self._finish(reason=b"maximum session length")
            return True
        if expiry is not None:
            message, reason = _EXPIRED[expiry]
            limits = self.clock.limits
            seconds = limits.config_timeout if expiry is Expiry.CONFIG else limits.idle_timeout
            await self._refuse(message.format(limit=seconds), reason)
            return True
        if self.clock.recheck_due(now):
            self.clock.rechecked(now)
            refusal = await self._recheck()
            if refusal is not None:
                await self._refuse(f"{refusal} The stream was closed.", "credential no longer valid")
                return True
        return False

    async def _recheck(self) -> str | None:
        """Why the credential may no longer stream, or None. A failure to check (the database is
        unreachable) is no verdict on the credential: the session goes on and is checked again."""
        try:
            await recheck(self.request)
        except DomainError as exc:
            if exc.status in (401, 403):
                return exc.message
            log.warning("a stream's credential could not be checked again: %s", exc.message)
        except Exception:
            log.warning("a stream's credential could not be checked again", exc_info=True)
        return None

    async def _hold(self, seconds: float) -> bool:
        """Waits without reading, so the client's sends block once the socket's buffers fill;
        False as soon as the client's connection is gone, so that its slot is freed at once."""
        until = time.monotonic() + seconds
        while (left := until - time.monotonic()) > 0:
            if self.request.transport is None:
                return False
            await asyncio.sleep(min(left, _PEER_POLL_S))
        return self.request.transport is not None

    async def _refuse(self, message: str, reason: str) -> None:
        await _error(self.ws, message)
        await self.ws.close(code=POLICY_VIOLATION, message=reason.encode())

    # --- the frames ----------------------------------------------------------------------------

    async def shut_down(self, grace: float) -> None:
        """The server is stopping: ends the session as eof would, but with close 1001. Runs beside
        the receive loop, which then sees the socket close."""
        if self.ending or self.ws.closed:
            return
        if self.policy is None:
            self.ending = True
            await self.ws.close(code=GOING_AWAY, message=b"server shutting down")
            return
        await self._finish(code=GOING_AWAY, reason=b"server shutting down", grace=grace)

    async def _on_text(self, data: str) -> bool:
        """Handles a control frame; True once the session has ended."""
        if self.ending:
            return False
        try:
            frame = _control_frame(data)
        except ValueError as exc:
            await _error(self.ws, str(exc))
            return False
        kind = frame.get("type")
        if kind == "config":
            return await self._configure(frame)
        if kind == "eof":
            if self.policy is None:
                await _error(self.ws, "Send a config frame and audio before eof.")
                return False
            await self._finish()
            return True
        named = repr(kind) if isinstance(kind, str) and len(kind) <= 32 else "(missing or not a short string)"
        await _error(self.ws, f"Unknown frame type {named}: expected config or eof.")
        return False

    async def _configure(self, frame: dict) -> bool:
        """Configures the session and takes a stream slot; True when the server is full (the
        session has then ended)."""
        if self.policy is not None:
            await _error(self.ws, "The stream is already configured; config may be sent once, before audio.")
            return False
        rate = frame.get("sample_rate", 16_000)
        if not isinstance(rate, int) or isinstance(rate, bool) or not MIN_RATE <= rate <= MAX_RATE:
            await _error(self.ws, f"sample_rate must be an integer from {MIN_RATE} to {MAX_RATE} (Hz).")
            return False
        if self.state.streams >= self.state.settings.stt_max_streams:
            await _error(self.ws, "The server is serving as many real-time sessions as it can; retry later.")
            await self.ws.close(code=TRY_AGAIN_LATER, message=b"at capacity")
            return True
        self.state.streams += 1
        self.holds_slot = True
        self.pcm = PcmStream(rate)
        bias = self.custom.vocabulary.prompt(None) if self.custom.vocabulary else ""
        self.policy = StreamingTranscriber(self.state.models.get_loaded_default(), bias=bias)
        self.clock.configure(time.monotonic())
        return False

    async def _on_audio(self, data: bytes) -> None:
        if self.ending:
            return  # arrived after the last pass began: not acknowledged, so not lost
        if self.policy is None:
            await _error(self.ws, "Audio arrived before the config frame; it was dropped.")
            return
        self.clock.add_audio(len(data) / (2 * self.pcm.rate), time.monotonic())
        self.policy.add_audio(self.pcm.push(data))
        self._maybe_pass()

    # --- the passes ----------------------------------------------------------------------------

    def _maybe_pass(self) -> None:
        if (self.running is None or self.running.done()) and not self.ws.closed and self.policy.due():
            self.running = asyncio.create_task(self._pass())

    async def _pass(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            update = await loop.run_in_executor(self.state.engine, self.policy.step)
        except Exception:
            log.exception("a streaming pass failed")
            await _error(self.ws, "A transcription pass failed; the session goes on.")
            return
        # A spoken form or a number cut across two finals is rewritten or masked in the result only.
        if update.final:
            await _send(self.ws, {"type": "final", "text": customised_text(update.final, self.custom)})
        await _send(self.ws, {"type": "partial", "text": customised_text(update.partial, self.custom)})
        # Audio that arrived during the pass may already make the next one due.
        self._maybe_pass()

    async def _finish(self, code: int = 1000, reason: bytes = b"", grace: float | None = None) -> None:
        """The last pass, the result, and the close. Within ``grace`` seconds if given: past it the
        result holds the words confirmed so far."""
        if self.ending:
            return
        self.ending = True
        try:
            async with asyncio.timeout(grace):
                result = await self._last_pass()
        except TimeoutError:
            log.warning("a stream's last pass did not finish within %g s; its result holds the confirmed words", grace)
            result = self.policy.confirmed()
        except Exception:
            # The upgrade is done: an HTTP 500 can no longer be sent, so say it in the stream.
            log.exception("the last pass of a stream failed")
            await _error(self.ws, "The final transcription pass failed; the result is lost.")
            await self.ws.close(code=INTERNAL_ERROR, message=b"transcription failed")
            return
        text, word_confidences = _customised_result(result, self.custom)
        await _send(self.ws, {"type": "result", "text": text, "language": result.language,
                              "word_confidences": word_confidences})
        await self.ws.close(code=code, message=reason)

    async def _last_pass(self):
        if self.running is not None:
            await asyncio.shield(self.running)
        self.policy.add_audio(self.pcm.flush())
        return await asyncio.get_running_loop().run_in_executor(self.state.engine, self.policy.finish)


def _customised_result(result, custom: Customisation) -> tuple[str, list[dict]]:
    """The result's text and words with the workspace's vocabulary and speech filter."""
    if not custom.vocabulary and custom.filter is None:
        return result.text, result.word_confidences
    words = customised_words([Word(w["word"], w["confidence"]) for w in result.word_confidences], custom)
    return customised_text(result.text, custom), [{"word": w.word, "confidence": w.confidence} for w in words]


def _control_frame(data: str) -> dict:
    """The JSON object of a control frame; ValueError with the message for the client otherwise.
    orjson parses without recursing in Python (and refuses past 1024 levels by itself); the depth
    bound then keeps a frame far from anything that does recurse."""
    if len(data.encode()) > MAX_CONTROL_BYTES:
        raise ValueError(f"A text frame is a control frame of at most {MAX_CONTROL_BYTES} bytes; "
                         "send audio as binary frames.")
    too_deep = ValueError(f"A text frame may nest JSON arrays and objects {MAX_CONTROL_DEPTH} deep at most.")
    try:
        frame = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if "depth" in str(exc):
            raise too_deep from None
        frame = None
    if not isinstance(frame, dict):
        raise ValueError("A text frame must be a JSON object: {\"type\": \"config\" | \"eof\", ...}.")
    if _depth(frame) > MAX_CONTROL_DEPTH:
        raise too_deep
    return frame


def _depth(value) -> int:
    """How many arrays and objects ``value`` nests inside one another, without recursion."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            pending.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


async def _send(ws: web.WebSocketResponse, frame: dict) -> None:
    if ws.closed:
        return
    # A client that vanished mid-send: the receive loop sees the closed socket next.
    with contextlib.suppress(ConnectionResetError):
        await ws.send_json(frame)


async def _error(ws: web.WebSocketResponse, message: str) -> None:
    await _send(ws, {"type": "error", "message": message})
