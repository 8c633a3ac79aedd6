"""Call access: web-call tokens and share links, made through the domain as the API makes them,
at a moment the test chooses (``now``) when it is about their expiry."""
from __future__ import annotations

from datetime import datetime

from models.kernel.db import session
from tests.support.factories.identity import Actor, principal


def web_call_token(actor: Actor, agent_id: str, *, version_id: str | None = None, ttl_seconds: int | None = None,
                   now: datetime | None = None) -> tuple[str, str]:
    """A web-call token of the actor's workspace for the agent (its live version unless
    ``version_id``), issued at ``now``; its id and the token."""
    from models.call_access import web_tokens
    with session():
        record, token = web_tokens.issue(principal(actor), workspace_id=actor.workspace_id, agent_id=agent_id,
                                         version_id=version_id, ttl_seconds=ttl_seconds, now=now)
    return record.id, token


def share_link(actor: Actor, call_id: str, *, expires_in_hours: int = 72, include_recording: bool = False,
               now: datetime | None = None) -> tuple[str, str]:
    """A share link of the call, made at ``now``; its id and the token."""
    from models.call_access import share_links
    with session():
        record, token = share_links.create(principal(actor), workspace_id=actor.workspace_id, call_id=call_id,
                                           expires_in_hours=expires_in_hours, include_recording=include_recording,
                                           now=now)
    return record.id, token
