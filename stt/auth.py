"""Admission on the speech server: the management API's credentials, rate limits and permissions,
one place for the HTTP endpoints and the WebSocket handshake.

Transcribing (a file or a stream) needs ``speech:transcribe``, which members and above hold and
viewers do not. Listing the models needs only a valid credential. An access token of a user in
several workspaces names the one it acts in with ``?workspaceId=``, as on the management API.

A real-time session is admitted once, at its handshake, which counts one request against the
credential's rate limit; ``recheck`` then confirms every few seconds that the credential is still
valid and still holds the permission, without counting against the limit.
"""
from __future__ import annotations

import asyncio

from aiohttp import web

from models.billing import credits
from models.identity.access import admit, bearer_secret, require
from models.identity.credentials import authenticate as identify
from models.identity.principal import Principal
from models.kernel.db import session

from .state import State

TRANSCRIBE = "speech:transcribe"
_RATE_HEADERS = web.RequestKey("rate_limit_headers", dict)
_CREDENTIAL = web.RequestKey("credential_id", str)


async def authenticate(request: web.Request, state: State, *, permission: str | None = TRANSCRIBE,
                       query_token: bool = False) -> Principal:
    """The caller, admitted. Raises the domain's Unauthenticated, Forbidden, RateLimited or
    InvalidInput, which the request middleware answers in OpenAI's error shape (the WebSocket
    handshake likewise).

    ``query_token``: browsers cannot set headers on a WebSocket handshake, so there the secret may
    come as ``?token=``."""
    secret, workspace_id = _credential(request, query_token)

    def run() -> Principal:
        with session():
            principal = admit(secret, policy=state.policy, workspace_id=workspace_id, permission=permission,
                              report=lambda headers: request.__setitem__(_RATE_HEADERS, headers))
            if permission == TRANSCRIBE:
                credits.require_credit(principal.workspace_id)  # 402 below zero, when enforced
            return principal

    # admit() queries the database: off the event loop.
    principal = await asyncio.get_running_loop().run_in_executor(None, run)
    request[_CREDENTIAL] = principal.credential_id
    return principal


def credential_of(request: web.Request) -> str | None:
    """The id of the credential admitted for ``request`` (for the access line; never the secret)."""
    return request.get(_CREDENTIAL)


async def recheck(request: web.Request, *, permission: str = TRANSCRIBE) -> None:
    """Confirms that the credential of an admitted WebSocket session is still valid and holds
    ``permission``; raises Unauthenticated (deleted, deactivated, expired) or Forbidden otherwise.
    Does not count against the rate limit."""
    secret, workspace_id = _credential(request, query_token=True)

    def run() -> None:
        with session():
            require(identify(secret, workspace_id=workspace_id), permission)

    await asyncio.get_running_loop().run_in_executor(None, run)


def _credential(request: web.Request, query_token: bool) -> tuple[str, str | None]:
    """The bearer secret and the workspace the request names."""
    token = request.query.get("token") if query_token else None
    secret = token or bearer_secret(request.headers.get("Authorization"))
    return secret, request.query.get("workspaceId") or None


async def add_rate_limit_headers(request: web.Request, response: web.StreamResponse) -> None:
    """on_response_prepare: every response that follows an admission, errors and the WebSocket
    handshake included, says where the caller stands."""
    for name, value in request.get(_RATE_HEADERS, {}).items():
        response.headers.setdefault(name, value)
