"""Per-request context: the request id every response carries, headers that other layers add to the
response whatever produced it (rate-limit headers), and the one access-log line per request."""
from __future__ import annotations

import logging
import time
from contextvars import ContextVar
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from core.request_log import log_access, request_id_from

access_log = logging.getLogger("api.access")


@dataclass
class _RequestState:
    id: str
    response_headers: dict[str, str] = field(default_factory=dict)


_state: ContextVar[_RequestState | None] = ContextVar("request_state", default=None)


def request_id() -> str:
    state = _state.get()
    return state.id if state else "-"


def add_response_headers(headers: dict[str, str]) -> None:
    state = _state.get()
    if state is not None:
        state.response_headers.update(headers)


class RequestContextMiddleware:
    """Outermost layer, so that its header and log line cover every response, errors included."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = dict(scope.get("headers") or ()).get(b"x-request-id", b"").decode("latin-1")
        state = _RequestState(request_id_from(incoming))
        token = _state.set(state)
        started = time.perf_counter()
        status = 500

        async def send_with_headers(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"x-request-id"]
                headers.append((b"x-request-id", state.id.encode()))
                present = {k.lower() for k, _ in headers}
                # A header the response already sets (a 429's own Retry-After...) is not sent twice.
                headers.extend((name, v.encode()) for k, v in state.response_headers.items()
                               if (name := k.lower().encode()) not in present)
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        finally:
            log_access(access_log, scope["method"], scope["path"], status, started, time.perf_counter(), state.id)
            _state.reset(token)
