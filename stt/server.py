"""The speech-to-text server: OpenAI-compatible file transcription over HTTP (aiohttp).

A thin shell over stt.engine: it authenticates against the management database, reads the upload
within its size limit, and hands decoding and inference to a bounded pool of engine workers. The
event loop never decodes or transcribes.
"""
from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import aiohttp_cors
from aiohttp import web

from core.boot import boot
from core.request_log import log_access, request_id_from
from core.settings import Settings
from models.errors import DomainError

from .audio import SUPPORTED_FORMATS, AudioError, decode, format_of
from .auth import add_rate_limit_headers, authenticate
from .errors import ApiError
from .languages import code_of
from .models import DEFAULT_MODEL, ModelSet, available_models
from .state import STATE, State
from .stream import stream
from .subtitles import srt, vtt

STATIC = Path(__file__).resolve().parent / "static"

log = logging.getLogger("stt")
access_log = logging.getLogger("stt.access")

RESPONSE_FORMATS = ("json", "text", "verbose_json", "srt", "vtt")
_TEXT_FIELDS = {"model", "response_format", "temperature", "language", "prompt"}
_MAX_FIELD_BYTES = 16 * 1024
# Room for the multipart framing and the text fields around a file of the maximum size.
_FORM_OVERHEAD = 64 * 1024

# --- middleware ----------------------------------------------------------------------------------

@web.middleware
async def request_context(request: web.Request, handler):
    """Request id, OpenAI-shaped errors for everything (aiohttp's own 404/405 too), one log line."""
    rid = request_id_from(request.headers.get("X-Request-ID"))
    started = time.perf_counter()
    try:
        response = await handler(request)
    except ApiError as exc:
        response = exc.response()
    except DomainError as exc:
        response = ApiError.from_domain(exc).response()
    except web.HTTPException as exc:
        response = ApiError(exc.status, exc.reason if exc.status != 404 else f"No route for {request.method} {request.path}",
                            headers={k: v for k, v in exc.headers.items() if k.lower() == "allow"}).response()
    except Exception:
        log.exception("unhandled error in %s %s [request %s]", request.method, request.path, rid)
        response = ApiError(500, f"Internal server error; quote request id {rid} when reporting it.").response()
    response.headers["X-Request-ID"] = rid
    state: State = request.app[STATE]
    state.metrics.requests[response.status] = state.metrics.requests.get(response.status, 0) + 1
    log_access(access_log, request.method, request.path, response.status, started, time.perf_counter(), rid)
    return response


# --- handlers ------------------------------------------------------------------------------------

async def transcriptions(request: web.Request) -> web.StreamResponse:
    state: State = request.app[STATE]
    await authenticate(request, state)
    if state.admitted >= state.capacity:
        raise ApiError(503, "The server is at capacity; retry shortly.", code="overloaded",
                       headers={"Retry-After": "2"})
    state.admitted += 1
    state.metrics.queue_depth = max(0, state.admitted - state.settings.stt_workers)
    try:
        form = await _read_form(request, state.settings.stt_max_file_bytes)
        job = _job(form, state)
        result = await asyncio.get_running_loop().run_in_executor(state.engine, _run, state, job)
    finally:
        state.admitted -= 1
        state.metrics.queue_depth = max(0, state.admitted - state.settings.stt_workers)
    state.metrics.audio_seconds += result.duration
    state.metrics.inference_seconds += result.inference_seconds
    return _render(result, job["response_format"])


async def demo_page(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC / "demo.html", headers={"Content-Type": "text/html; charset=utf-8"})


def _allow_cross_origin(app: web.Application, origins: str) -> None:
    """Lets pages served elsewhere call the HTTP endpoints (WebSockets are not subject to CORS)."""
    options = aiohttp_cors.ResourceOptions(allow_credentials=False, expose_headers="*", allow_headers="*",
                                           allow_methods=["GET", "POST"])
    cors = aiohttp_cors.setup(app, defaults={origin.strip(): options for origin in origins.split(",") if origin.strip()})
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
    return web.Response(text=request.app[STATE].metrics.render(request.app[STATE].streams), content_type="text/plain")


async def list_models(request: web.Request) -> web.Response:
    await authenticate(request, request.app[STATE], permission=None)
    ids = request.app[STATE].models.ids
    return web.json_response({"object": "list", "data": [{"id": i, "object": "model", "owned_by": "system"} for i in ids]})


# --- steps ---------------------------------------------------------------------------------------

async def _read_form(request: web.Request, max_file: int) -> dict:
    if request.content_length is not None and request.content_length > max_file + _FORM_OVERHEAD:
        raise _too_large(max_file)
    if not request.content_type.startswith("multipart/form-data"):
        raise ApiError(400, "The request must be multipart/form-data with a 'file' field.", param="file")
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
                form[part.name] = value.decode("utf-8", errors="replace").strip()
            else:
                while await part.read_chunk(256 * 1024):
                    pass
    except ValueError as exc:
        raise ApiError(400, f"The multipart body could not be read: {exc}.", param="file") from None
    return form


def _job(form: dict, state: State) -> dict:
    """The validated request, or the first rule it breaks."""
    if "file" not in form:
        raise ApiError(400, "The 'file' field is required: upload the audio as a multipart file.", param="file")
    if not form["file"]:
        raise ApiError(400, "The uploaded file is empty.", param="file", code="empty_file")
    claimed = (form.get("filename") or "").rsplit(".", 1)
    if len(claimed) == 2 and format_of(form["filename"]) is None:
        raise _unsupported(claimed[1])
    model = form.get("model") or DEFAULT_MODEL
    if model not in state.models.ids:
        raise ApiError(400, f"Unknown model '{model}'. Known models: {', '.join(state.models.ids)}.",
                       param="model", code="model_not_found")
    response_format = form.get("response_format") or "json"
    if response_format not in RESPONSE_FORMATS:
        raise ApiError(400, f"response_format must be one of: {', '.join(RESPONSE_FORMATS)}.", param="response_format")
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
            "language": language, "prompt": form.get("prompt") or None}


def _run(state: State, job: dict):
    """In an engine worker: decode, then transcribe."""
    try:
        samples = decode(job["file"])
    except AudioError as exc:
        message = str(exc)
        if "is not one of" in message:
            raise ApiError(400, f"Unsupported file format: {message}.", param="file", code="unsupported_format") from None
        raise ApiError(400, f"The audio could not be decoded: {message}.", param="file", code="invalid_audio") from None
    transcriber = state.models.get(job["model"])
    return transcriber.transcribe(samples, language=job["language"], prompt=job["prompt"],
                                  temperature=job["temperature"])


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
        "words": [{"word": w.word, "confidence": w.confidence} for w in result.words],
        "segments": [{"id": i, "start": s.start, "end": s.end, "text": s.text} for i, s in enumerate(result.segments)],
    })


def _too_large(limit: int) -> ApiError:
    return ApiError(413, f"The file is larger than the limit of {limit} bytes ({limit / 2**20:.0f} MB).",
                    param="file", code="file_too_large")


def _unsupported(extension: str) -> ApiError:
    return ApiError(400, f"Unsupported file format '{extension}'. Supported formats: {', '.join(SUPPORTED_FORMATS)}.",
                    param="file", code="unsupported_format")


# --- the app -------------------------------------------------------------------------------------

def create_app(settings: Settings | None = None, models: ModelSet | None = None) -> web.Application:
    """The speech server's aiohttp app; the default model is loaded before it serves."""
    settings = settings or Settings.from_env()
    boot(settings)
    models = models or ModelSet(available_models(settings.data_dir, settings.stt_model_path),
                                n_threads=settings.stt_threads, instances=settings.stt_workers)
    state = State(settings, models)
    app = web.Application(middlewares=[request_context], client_max_size=settings.stt_max_file_bytes + _FORM_OVERHEAD)
    app[STATE] = state
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

    async def shutdown(app: web.Application) -> None:
        state.engine.shutdown(wait=False, cancel_futures=True)

    app.on_startup.append(load_default_model)
    app.on_cleanup.append(shutdown)
    return app


def main() -> None:
    settings = Settings.from_env()
    app = create_app(settings)
    # The bindings log every pass at INFO; our access line already says what a request took.
    logging.getLogger("pywhispercpp").setLevel(max(logging.WARNING, logging.getLogger().level))
    log.info("speech server on http://%s:%d/v1", settings.host, settings.stt_port)
    web.run_app(app, host=settings.host, port=settings.stt_port, access_log=None, print=None)


if __name__ == "__main__":
    main()
