"""Per-request context: the request id every response carries, headers that other layers add to the
response whatever produced it (rate-limit headers), and, once the response is sent, the one
access-log line (with the operation and the admitted credential's id, the bytes of body sent, and
whether the response was sent whole) and the request's metrics."""
from __future__ import annotations

import logging
import time
from contextvars import ContextVar
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from core.request_log import log_access, request_id_from

from .metrics import REQUESTS

access_log = logging.getLogger("api.access")


@dataclass
class _RequestState:
    id: str
    response_headers: dict[str, str] = field(default_factory=dict)
    credential_id: str | None = None


_state: ContextVar[_RequestState | None] = ContextVar("request_state", default=None)


def request_id() -> str:
    state = _state.get()
    return state.id if state else "-"


def add_response_headers(headers: dict[str, str]) -> None:
    state = _state.get()
    if state is not None:
        state.response_headers.update(headers)


def note_credential(credential_id: str) -> None:
    """The admitted caller's credential, for the access line (by id: the secret is never logged)."""
    state = _state.get()
    if state is not None:
        state.credential_id = credential_id


class RequestContextMiddleware:
    """Outermost layer, so that its header and log line cover every response, errors included."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # connexion's routing records the operation in a shallow copy of the scope: a dict present
        # here is shared with that copy, so the operation is readable below.
        extensions = scope.setdefault("extensions", {})
        incoming = dict(scope.get("headers") or ()).get(b"x-request-id", b"").decode("latin-1")
        state = _RequestState(request_id_from(incoming))
        token = _state.set(state)
        started = time.perf_counter()
        status = 500
        sent = _Sent()

        async def receive_noting_disconnect() -> Message:
            message = await receive()
            if message["type"] == "http.disconnect" and not sent.complete:
                sent.client_left = True
            return message

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
            if message["type"] == "http.response.body" and not sent.client_left:
                sent.bytes += len(message.get("body", b""))
                sent.complete = not message.get("more_body", False)

        try:
            await self.app(scope, receive_noting_disconnect, send_with_headers)
        finally:
            finished = time.perf_counter()
            # connexion's routing names the operation in the scope; a path it did not route has none.
            operation = extensions.get("connexion_routing", {}).get("operation_id") or "-"
            REQUESTS.observe(operation, status, finished - started)
            log_access(access_log, scope["method"], scope["path"], status, started, finished, state.id,
                       operation=operation, credential_id=state.credential_id, bytes_sent=sent.bytes,
                       complete=sent.complete)
            _state.reset(token)


@dataclass
class _Sent:
    """What of the response reached the server: the body's bytes handed over before the client
    left, and whether its last part was (a response the app gave up on, or whose client left
    first, is not complete, whatever its status said)."""
    bytes: int = 0
    complete: bool = False
    client_left: bool = False
