"""Admission of a request, shared by both servers: who is calling, and may it call now."""
from __future__ import annotations

from .credentials import Principal, authenticate
from .db import database
from .errors import RateLimited, Unauthenticated
from .rate_limits import Decision, Policy, consume


def admit(secret: str, *, policy: Policy, workspace_id: str | None = None) -> tuple[Principal, Decision | None]:
    """Authenticate ``secret`` and count the request against its rate limit.

    Raises Unauthenticated or Forbidden (see ``authenticate``), and RateLimited, whose headers
    say when to retry. Opens and closes its own connection: call it from a worker thread.
    """
    with database.connection_context():
        principal = authenticate(secret, workspace_id=workspace_id)
        limit = policy.limit_for(principal.rate_limit)
        decision = consume(principal.credential_id, limit) if limit else None
    if decision is not None and not decision.allowed:
        raise RateLimited(f"Rate limit of {decision.limit} requests exceeded; retry in {decision.reset_s} s.",
                          headers=decision.headers())
    return principal, decision


def bearer_secret(authorization: str | None) -> str:
    """The secret of an ``Authorization: Bearer <secret>`` header value; Unauthenticated otherwise."""
    if not authorization:
        raise Unauthenticated("Authorization: Bearer <access token or API key> is required.")
    scheme, _, secret = authorization.partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise Unauthenticated("The Authorization header must be 'Bearer <access token or API key>'.")
    return secret.strip()
