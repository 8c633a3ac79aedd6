"""Admission on the speech server: the management API's credentials and rate limits, one place
for the HTTP endpoints and the WebSocket handshake."""
from __future__ import annotations

import asyncio

from aiohttp import web

from models.access import admit, bearer_secret

from .state import State


async def authenticate(request: web.Request, state: State, *, query_token: bool = False) -> dict[str, str]:
    """The rate-limit headers for the response. Raises the domain's Unauthenticated, Forbidden or
    RateLimited, which the request middleware answers in OpenAI's error shape.

    ``query_token``: browsers cannot set headers on a WebSocket handshake, so there the secret may
    come as ``?token=``."""
    token = request.query.get("token") if query_token else None
    secret = token or bearer_secret(request.headers.get("Authorization"))
    # admit() queries the database: off the event loop.
    _, decision = await asyncio.get_running_loop().run_in_executor(None, lambda: admit(secret, policy=state.policy))
    return decision.headers() if decision else {}
