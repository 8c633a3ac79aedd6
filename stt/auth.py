"""Admission on the speech server: the management API's credentials, rate limits and permissions,
one place for the HTTP endpoints and the WebSocket handshake.

Transcribing (a file or a stream) needs ``speech:transcribe``, which members and above hold and
viewers do not. Listing the models needs only a valid credential. An access token of a user in
several workspaces names the one it acts in with ``?workspaceId=``, as on the management API.
"""
from __future__ import annotations

import asyncio

from aiohttp import web

from models.access import admit, bearer_secret
from models.db import session

from .state import State

TRANSCRIBE = "speech:transcribe"
_RATE_HEADERS = web.RequestKey("rate_limit_headers", dict)


async def authenticate(request: web.Request, state: State, *, permission: str | None = TRANSCRIBE,
                       query_token: bool = False) -> None:
    """Raises the domain's Unauthenticated, Forbidden, RateLimited or InvalidInput, which the
    request middleware answers in OpenAI's error shape (the WebSocket handshake likewise).

    ``query_token``: browsers cannot set headers on a WebSocket handshake, so there the secret may
    come as ``?token=``."""
    token = request.query.get("token") if query_token else None
    secret = token or bearer_secret(request.headers.get("Authorization"))
    workspace_id = request.query.get("workspaceId") or None

    def run():
        with session():
            admit(secret, policy=state.policy, workspace_id=workspace_id, permission=permission,
                  report=lambda headers: request.__setitem__(_RATE_HEADERS, headers))

    # admit() queries the database: off the event loop.
    await asyncio.get_running_loop().run_in_executor(None, run)


async def add_rate_limit_headers(request: web.Request, response: web.StreamResponse) -> None:
    """on_response_prepare: every response that follows an admission, errors and the WebSocket
    handshake included, says where the caller stands."""
    for name, value in request.get(_RATE_HEADERS, {}).items():
        response.headers.setdefault(name, value)
