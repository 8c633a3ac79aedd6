"""The speech-to-text server: OpenAI-compatible file transcription over HTTP (aiohttp).

A thin shell over stt.engine: it authenticates against the management database, reads the upload
within its size limit, and hands decoding and inference to a bounded pool of engine workers. The
event loop never decodes or transcribes.

An upload's way through, and what keeps a few hostile requests from shutting out everyone:

- the body is read first, and dropped (408) once nothing of it has arrived for STT_BODY_TIMEOUT_S;
  a declared length over the limit is refused (413) before any of it is read;
- only then does the job take a place among those running or waiting for the engine
  (STT_WORKERS + STT_QUEUE; past it 503 with Retry-After), so a stalled upload holds none;
- the audio is decoded and transcribed in pieces of about 30 s, one engine task each
  (stt.passes): other jobs run between the pieces of a long file, and no job holds more than a
  piece of samples; audio over STT_MAX_AUDIO_SECONDS is refused from the container's stated
  duration, else as soon as decoding passes it;
- a job whose client has gone leaves its place at once: its waiting engine task is cancelled, and
  a running one is the last.
"""
from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
import re
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import aiohttp_cors
import numpy as np
from aiohttp import web, web_response

from core.boot import boot
from core.metrics import CONTENT_TYPE, exposition
from core.request_log import log_access, request_id_from
from core.settings import Settings
from models.kernel.errors import DomainError

from . import metrics as measured
from . import usage
from .audio import (
    SUPPORTED_FORMATS,
    AudioError,
    AudioTooLong,
    UnsupportedFormat,
    format_of,
)
from .auth import add_rate_limit_headers, authenticate, credential_of
from .customisation import customised
from .engine import Transcript
from .errors import ApiError
from .languages import code_of
from .models import DEFAULT_MODEL, ModelSet, available_models, model_aliases
from .passes import FileTranscription
from .state import STATE, State
from .stream import stream
from .subtitles import srt, vtt

STATIC = Path(__file__).resolve().parent / "static"

log = logging.getLogger("stt")
access_log = logging.getLogger("stt.access")

RESPONSE_FORMATS = ("json", "text", "verbose_json", "srt", "vtt")
TIMESTAMP_GRANULARITIES = ("word", "segment")
# The OpenAI SDK sends timestamp_granularities as the repeated field "timestamp_granularities[]";
# the bare name, with values separated by commas, is taken too.
_GRANULARITY_FIELDS = ("timestamp_granularities[]", "timestamp_granularities")
_TEXT_FIELDS = {"model", "response_format", "temperature", "language", "prompt", *_GRANULARITY_FIELDS}
_MAX_FIELD_BYTES = 16 * 1024
# Room for the multipart framing and the text fields around a file of the maximum size.
_FORM_OVERHEAD = 64 * 1024
# How often a job waiting for the engine looks whether its client is still there.
_CLIENT_CHECK_S = 0.25
# What the Server header says instead of aiohttp's "Python/3.x aiohttp/3.x".
SERVER_NAME = "speech-server"


class ClientGone(Exception):
    """The client closed the connection before its answer: there is no one left to answer."""


# --- middleware ----------------------------------------------------------------------------------

@web.middleware
async def request_context(request: web.Request, handler):
    """Request id, OpenAI-shaped errors for everything (aiohttp's own 404/405 too), one log line."""
    rid = request_id_from(request.headers.get("X-Request-ID"))
    started = time.perf_counter()
    body_stalled = False
    try:
        response = await handler(request)
    except ApiError as exc:
        response = exc.response()
        body_stalled = exc.status == 408
    except ClientGone:
        # Never sent; the status (nginx's "client closed request") is for the log and the counters.
        response = web.Response(status=499)
    except DomainError as exc:
        response = ApiError.from_domain(exc).response()
    except web.HTTPException as exc:
        response = ApiError(exc.status, exc.reason if exc.status != 404 else f"No route for {request.method} {request.path}",
                            headers={k: v for k, v in exc.headers.items() if k.lower() == "allow"}).response()
    except Exception:
        log.exception("unhandled error in %s %s [request %s]", request.method, request.path, rid)
        response = ApiError(500, f"Internal server error; quote request id {rid} when reporting it.").response()
    response.headers["X-Request-ID"] = rid
    finished = time.perf_counter()
    resource = request.match_info.route.resource
    route = resource.canonical if resource is not None else "-"
    measured.REQUESTS.observe(route, response.status, finished - started)
    log_access(access_log, request.method, request.path, response.status, started, finished, rid,
               operation=route, credential_id=credential_of(request))
    if body_stalled:
        await _answer_and_close(request, response)
    return response


async def _answer_and_close(request: web.Request, response: web.StreamResponse) -> None:
    """Sends ``response`` if the socket can still take it, then closes the connection at once.
    For a body that stopped coming: aiohttp would otherwise go on reading the rest of it, for up
    to 10 s ("lingering close"), which a stalled client never sends."""
    response.force_close()  # says "Connection: close"
    try:
        await response.prepare(request)
        await response.write_eof()
    except ConnectionError:
        pass
    request.protocol.force_close()


# --- handlers ------------------------------------------------------------------------------------

async def transcriptions(request: web.Request) -> web.StreamResponse:
    state: State = request.app[STATE]
    principal = await authenticate(request, state)
    form = await _read_form(request, state.settings)
    job = _job(form, state)
    custom = await state.customisations.get(principal.workspace_id)
    if custom.vocabulary:  # the request's own prompt first, then the written forms that fit
        job["prompt"] = custom.vocabulary.prompt(job["prompt"])
    with _admitted(state):
        result = await _transcribe(request, state, job)
    measured.transcribed(result.duration, result.inference_seconds)
    result = customised(result, custom)
    await usage.debit(principal, result.duration, "file")
    return _render(result, job["response_format"])


async def demo_page(request: web.Request) -> web.Response:
    page = request.app[DEMO_PAGE]
    return web.Response(body=page.html, content_type="text/html", charset="utf-8", headers=page.headers)


def _allow_cross_origin(app: web.Application, origins: str) -> None:
    """Lets pages served by the given origins call the HTTP endpoints (WebSockets are not subject
    to CORS). With none given, nothing is set up: browsers keep other sites' pages out."""
    allowed = [origin.strip() for origin in origins.split(",") if origin.strip()]
    if not allowed:
        return
    options = aiohttp_cors.ResourceOptions(allow_credentials=False, expose_headers="*", allow_headers="*",
                                           allow_methods=["GET", "POST"])
    cors = aiohttp_cors.setup(app, defaults={origin: options for origin in allowed})
    for route in list(app.router.routes()):
        if route.resource is not None and route.resource.canonical != "/v1/audio/stream":
            cors.add(route)


async def health(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def ready(request: web.Request) -> web.Response:
    state: State = request.app[STATE]
    if not state.ready:
        return web.json_response({"status": "loading"}, status=503)
    return web.json_response({"status": "ready", "models": state.models.ids})


async def metrics(request: web.Request) -> web.Response:
    return web.Response(body=exposition(), headers={"Content-Type": CONTENT_TYPE})


async def list_models(request: web.Request) -> web.Response:
    """OpenAI's model list: our models, then the OpenAI ids taken as the default model."""
    state: State = request.app[STATE]
    await authenticate(request, state, permission=None)
    return web.json_response({"object": "list", "data": [
        {"id": name, "object": "model", "created": state.models.created(state.models.resolve(name)),
         "owned_by": "system"} for name in state.models.names]})


# --- steps ---------------------------------------------------------------------------------------

async def _read_form(request: web.Request, settings: Settings) -> dict:
    """The multipart form, read for as long as the body keeps arriving."""
    max_file = settings.stt_max_file_bytes
    if request.content_length is not None and request.content_length > max_file + _FORM_OVERHEAD:
        raise _too_large(max_file)
    if not request.content_type.startswith("multipart/form-data"):
        raise ApiError(400, "The request must be multipart/form-data with a 'file' field.", param="file")
    arriving = _BodyProgress(request, settings.stt_body_timeout_s)
    return await _watched(asyncio.ensure_future(_parse_form(request, max_file)), arriving.check, arriving.every)


class _BodyProgress:
    """Whether an upload's body is still arriving, by the bytes aiohttp has received for it (the
    multipart reader may wait for several packets before it returns any)."""

    def __init__(self, request: web.Request, timeout: float):
        self._content, self._timeout = request.content, timeout
        self._seen, self._since = request.content.total_bytes, time.monotonic()
        # Ten checks per timeout, at most one a second: a stalled body is dropped within 10% past it.
        self.every = max(0.05, min(1.0, timeout / 10))

    def check(self) -> None:
        """Raises 408 once nothing has arrived for the timeout."""
        if self._content.total_bytes != self._seen:
            self._seen, self._since = self._content.total_bytes, time.monotonic()
        elif time.monotonic() - self._since > self._timeout:
            raise ApiError(408, f"Nothing of the upload arrived for {self._timeout:g} s, so the request was dropped; "
                                "send the body without pausing.", code="body_timeout")


async def _parse_form(request: web.Request, max_file: int) -> dict:
    form: dict = {}
    try:
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if part.name == "file":
                form["filename"] = part.filename
                data = bytearray()
                while chunk := await part.read_chunk(256 * 1024):
                    data.extend(chunk)
                    if len(data) > max_file:
                        raise _too_large(max_file)
                form["file"] = bytes(data)
            elif part.name in _TEXT_FIELDS:
                value = bytearray()
                while chunk := await part.read_chunk(8192):
                    value.extend(chunk)
                    if len(value) > _MAX_FIELD_BYTES:
                        raise ApiError(400, f"The field {part.name} is longer than {_MAX_FIELD_BYTES} bytes.",
                                       param=part.name)
                text = value.decode("utf-8", errors="replace").strip()
                # A field named with [] is a list (repeated, as the OpenAI SDK sends one): every value is kept.
                form[part.name] = f"{form[part.name]},{text}" if part.name.endswith("[]") and part.name in form else text
            else:
                while await part.read_chunk(256 * 1024):
                    pass
    except ValueError as exc:
        raise ApiError(400, f"The multipart body could not be read: {exc}.", param="file") from None
    except ConnectionError:
        # aiohttp fails the body's stream when the connection is lost.
        raise ClientGone() from None
    return form


@contextmanager
def _admitted(state: State):
    """A place among the jobs running or waiting for the engine; 503 when there is none."""
    if state.admitted >= state.capacity:
        measured.REFUSED_AT_CAPACITY.inc()
        raise ApiError(503, "The server is at capacity; retry shortly.", code="overloaded",
                       headers={"Retry-After": "2"})
    state.admitted += 1
    try:
        yield
    finally:
        state.admitted -= 1


async def _transcribe(request: web.Request, state: State, job: dict) -> Transcript:
    """The job's audio, piece by piece, each piece its own engine task (see stt.passes)."""
    work = FileTranscription(job["file"], partial(_run, state, job), language=job["language"],
                             max_seconds=state.settings.stt_max_audio_seconds)
    try:
        done = False
        while not done:
            done = await _in_engine(request, state, work.step)
        return work.result()
    except AudioError as exc:
        raise _audio_refusal(exc) from None
    finally:
        work.close()


async def _in_engine(request: web.Request, state: State, task: Callable):
    """``task``'s result, run in the engine pool. Once the client has gone, the task is cancelled
    if it has not started (a running one finishes) and ClientGone is raised.

    aiohttp cancels no handler whose client leaves unless the whole server runs with
    ``handler_cancellation``, which would cut the WebSocket sessions short at any await as well; a
    lost connection shows as the request's transport going away."""
    def check() -> None:
        if request.transport is None or request.transport.is_closing():
            raise ClientGone()

    return await _watched(asyncio.wrap_future(state.engine.submit(task)), check, _CLIENT_CHECK_S)


async def _watched(waiting: asyncio.Future, check: Callable[[], None], every: float):
    """The result of ``waiting``, calling ``check`` every ``every`` seconds meanwhile; whatever
    ``check`` raises cancels ``waiting`` and propagates."""
    try:
        while True:
            done, _ = await asyncio.wait({waiting}, timeout=every)
            if done:
                return waiting.result()
            check()
    finally:
        if not waiting.done():
            waiting.cancel()
            await asyncio.wait({waiting})


def _job(form: dict, state: State) -> dict:
    """The validated request, or the first rule it breaks."""
    if "file" not in form:
        raise ApiError(400, "The 'file' field is required: upload the audio as a multipart file.", param="file")
    if not form["file"]:
        raise ApiError(400, "The uploaded file is empty.", param="file", code="empty_file")
    claimed = (form.get("filename") or "").rsplit(".", 1)
    if len(claimed) == 2 and format_of(form["filename"]) is None:
        raise _unsupported(claimed[1])
    model = _model(form.get("model") or DEFAULT_MODEL, state)
    response_format = form.get("response_format") or "json"
    if response_format not in RESPONSE_FORMATS:
        raise ApiError(400, f"response_format must be one of: {', '.join(RESPONSE_FORMATS)}.", param="response_format")
    word_timestamps = _word_timestamps(form, response_format)
    try:
        temperature = float(form.get("temperature") or 0.0)
    except ValueError:
        raise ApiError(400, "temperature must be a number from 0 to 1.", param="temperature") from None
    if not 0.0 <= temperature <= 1.0:
        raise ApiError(400, "temperature must be from 0 to 1.", param="temperature")
    language = form.get("language") or None
    if language is not None and code_of(language) is None:
        raise ApiError(400, f"Unknown language '{language}': give an ISO-639-1 code such as 'en'.", param="language")
    return {"file": form["file"], "model": model, "response_format": response_format, "temperature": temperature,
            "language": language, "prompt": form.get("prompt") or None, "word_timestamps": word_timestamps}


def _model(requested: str, state: State) -> str:
    """The id of the model a request names, an alias of the default model included."""
    model = state.models.resolve(requested)
    if model is None:
        raise ApiError(400, f"Unknown model '{requested}'. Known models: {', '.join(state.models.names)}.",
                       param="model", code="model_not_found")
    return model


def _word_timestamps(form: dict, response_format: str) -> bool:
    """Whether the request asks for the words' times: "word" among its timestamp granularities.
    Segments are timed whatever it asks, as OpenAI's are."""
    given = [value.strip() for name in _GRANULARITY_FIELDS for value in form.get(name, "").split(",") if value.strip()]
    for value in given:
        if value not in TIMESTAMP_GRANULARITIES:
            raise ApiError(400, f"timestamp_granularities[] must be word, segment or both, not '{value}'.",
                           param="timestamp_granularities")
    if given and response_format != "verbose_json":
        raise ApiError(400, "timestamp_granularities[] needs response_format verbose_json.",
                       param="timestamp_granularities")
    return "word" in given


def _run(state: State, job: dict, samples: np.ndarray, language: str | None):
    """In an engine worker: one pass over a piece of the job's audio (``language``: the job's, or
    the one its first piece was found to speak)."""
    transcriber = state.models.get(job["model"])
    return transcriber.transcribe(samples, language=language, prompt=job["prompt"],
                                  temperature=job["temperature"], word_timestamps=job["word_timestamps"])


def _render(result, response_format: str) -> web.Response:
    ms = round(result.inference_seconds * 1000, 1)
    if response_format == "text":
        return web.Response(text=result.text, content_type="text/plain")
    if response_format == "srt":
        return web.Response(text=srt(result.segments), content_type="application/x-subrip")
    if response_format == "vtt":
        return web.Response(text=vtt(result.segments), content_type="text/vtt")
    if response_format == "json":
        return web.json_response({"text": result.text, "inference_time_ms": ms})
    return web.json_response({
        "task": "transcribe", "text": result.text, "language": result.language, "duration": round(result.duration, 3),
        "inference_time_ms": ms,
        "words": [_word(w) for w in result.words],
        "segments": [{"id": i, "start": s.start, "end": s.end, "text": s.text} for i, s in enumerate(result.segments)],
    })


def _word(word) -> dict:
    """A word of verbose_json: OpenAI's word, start and end (when timed), and its confidence."""
    if word.start is None:
        return {"word": word.word, "confidence": word.confidence}
    return {"word": word.word, "start": word.start, "end": word.end, "confidence": word.confidence}


def _too_large(limit: int) -> ApiError:
    return ApiError(413, f"The file is larger than the limit of {limit} bytes ({limit / 2**20:.0f} MB).",
                    param="file", code="file_too_large")


def _audio_refusal(exc: AudioError) -> ApiError:
    if isinstance(exc, UnsupportedFormat):
        return ApiError(400, f"Unsupported file format: {exc}.", param="file", code="unsupported_format")
    if isinstance(exc, AudioTooLong):
        return ApiError(400, f"The audio is too long: {exc}.", param="file", code="audio_too_long")
    return ApiError(400, f"The audio could not be decoded: {exc}.", param="file", code="invalid_audio")


def _unsupported(extension: str) -> ApiError:
    return ApiError(400, f"Unsupported file format '{extension}'. Supported formats: {', '.join(SUPPORTED_FORMATS)}.",
                    param="file", code="unsupported_format")


# --- the app -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class DemoPage:
    """The demo page and the headers it is served with. People paste tokens into it, so it runs
    only its own inline script and style (allowed by hash), talks only to this server, and may not
    be framed by another site (against clickjacking)."""
    html: bytes
    headers: dict[str, str]

    @classmethod
    def load(cls, path: Path) -> DemoPage:
        html = path.read_bytes()
        return cls(html, {"Content-Security-Policy": content_security_policy(html.decode("utf-8")),
                          "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer",
                          "X-Content-Type-Options": "nosniff"})


def content_security_policy(html: str) -> str:
    """What a page of inline script and style may do: run those (by hash) and the audio worklet
    module its script builds (a blob: URL), show the empty data: icon, connect to this server (its
    WebSocket included: CSP's 'self' covers ws: and wss: on the same host), and nothing else."""
    def hashes(tag: str) -> str:
        bodies = re.findall(rf"<{tag}(?:\s[^>]*)?>(.*?)</{tag}>", html, flags=re.DOTALL)
        return " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(b.encode()).digest()).decode()}'" for b in bodies)

    return "; ".join([
        "default-src 'none'", f"script-src {hashes('script')} blob:", f"style-src {hashes('style')}",
        "img-src data:", "connect-src 'self'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
    ])


DEMO_PAGE = web.AppKey("demo_page", DemoPage)


def _hide_framework_version() -> None:
    """The Server header names no framework and version (aiohttp's default does), on the answers
    aiohttp writes itself to malformed requests too, which no application hook sees."""
    web_response.SERVER_SOFTWARE = SERVER_NAME


def create_app(settings: Settings | None = None, models: ModelSet | None = None) -> web.Application:
    """The speech server's aiohttp app; the default model is loaded before it serves."""
    settings = settings or Settings.from_env()
    boot(settings)
    models = models or ModelSet(available_models(settings.data_dir, settings.stt_model_path, settings.stt_weights),
                                n_threads=settings.stt_threads, instances=settings.stt_workers,
                                aliases=model_aliases(settings.stt_model_aliases))
    state = State(settings, models)
    measured.track(state)
    _hide_framework_version()
    app = web.Application(middlewares=[request_context], client_max_size=settings.stt_max_file_bytes + _FORM_OVERHEAD)
    app[STATE] = state
    app[DEMO_PAGE] = DemoPage.load(STATIC / "demo.html")
    app.on_response_prepare.append(add_rate_limit_headers)
    app.router.add_post("/v1/audio/transcriptions", transcriptions)
    app.router.add_get("/v1/models", list_models)
    app.router.add_get("/health", health)
    app.router.add_get("/ready", ready)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/v1/audio/stream", stream)
    app.router.add_get("/demo", demo_page)
    app.router.add_get("/", demo_page)
    _allow_cross_origin(app, settings.cors_origins)

    async def load_default_model(app: web.Application) -> None:
        await asyncio.get_running_loop().run_in_executor(None, models.get, DEFAULT_MODEL)
        state.ready = True

    async def end_sessions(app: web.Application) -> None:
        # Before aiohttp waits (SHUTDOWN_TIMEOUT_S) for the handlers: a session would not end by itself.
        await asyncio.gather(*(session.shut_down(settings.shutdown_timeout_s) for session in list(state.sessions)),
                             return_exceptions=True)

    async def shutdown(app: web.Application) -> None:
        state.engine.shutdown(wait=False, cancel_futures=True)

    app.on_startup.append(load_default_model)
    app.on_shutdown.append(end_sessions)
    app.on_cleanup.append(shutdown)
    return app


def main() -> None:
    settings = Settings.from_env()
    app = create_app(settings)
    # The bindings log every pass at INFO; our access line already says what a request took.
    logging.getLogger("pywhispercpp").setLevel(max(logging.WARNING, logging.getLogger().level))
    log.info("speech server on http://%s:%d/v1", settings.host, settings.stt_port)
    # On SIGTERM aiohttp stops listening, runs on_shutdown (the sessions end with their result), waits
    # for the handlers in flight up to the timeout, then cancels the rest.
    web.run_app(app, host=settings.host, port=settings.stt_port, access_log=None, print=None,
                shutdown_timeout=settings.shutdown_timeout_s)


if __name__ == "__main__":
    main()
