"""Web-call tokens: a short-lived, single-use token that lets a browser start a call with one
version of an agent, with no other credential.

A member issues it for an agent, naming a version of that agent or taking its live (published)
one, for ``ttl_seconds`` (5 minutes by default, 30 s to 15 min). The token is shown once and kept
as its SHA-256, like every other secret of the service. Redeeming it answers the workspace, the
agent, the version and that version's configuration, and spends it: the one ``UPDATE`` that sets
``redeemed_at`` where it is still unset and unexpired decides, so that of two redemptions at once
exactly one wins, on either database. Every refusal (an unknown, malformed, used or expired token)
is the same 401 with the same message: a guesser learns nothing from telling them apart.
"""
from __future__ import annotations

import functools
from datetime import datetime, timedelta
from typing import NamedTuple

from models.call_access.tables import WebCallToken
from models.configs.tables import Agent, Version
from models.identity.principal import Principal
from models.kernel.db import database, utcnow
from models.kernel.errors import Conflict, InvalidInput, Unauthenticated
from models.kernel.pagination import Page, PageQuery, workspace_list
from models.kernel.secrets import WEB_CALL_TOKEN_PREFIX, digest, matches, new_secret

DEFAULT_TTL_S = 300
MIN_TTL_S = 30
MAX_TTL_S = 900
# What new_secret makes: the prefix and 43 characters of URL-safe base64.
_TOKEN_CHARS = len(WEB_CALL_TOKEN_PREFIX) + 43


class WebTokenRefused(Unauthenticated):
    """The one refusal of a redemption, whatever was wrong with the token."""

    def __init__(self) -> None:
        super().__init__("This web-call token is not valid: it is unknown, already used or expired. "
                         "Ask for a new one.")


class WebTokenRecord(NamedTuple):
    id: str
    workspace_id: str
    agent_id: str
    version_id: str
    version_number: int
    created_by: str
    created_at: datetime
    expires_at: datetime
    redeemed_at: datetime | None

    def status(self, now: datetime) -> str:
        if self.redeemed_at is not None:
            return "redeemed"
        return "expired" if self.expires_at <= now else "active"


class Redeemed(NamedTuple):
    token_id: str
    workspace_id: str
    agent_id: str
    version_id: str
    version_number: int
    config: dict


_T = WebCallToken
_COLUMNS = (_T.id, _T.workspace, _T.agent, _T.version, _T.version_number, _T.created_by, _T.created_at,
            _T.expires_at, _T.redeemed_at)


@functools.cache
def _page() -> PageQuery:
    """Newest first, along the index (workspace, created_at, id)."""
    return workspace_list(_T, _COLUMNS, order_by=(_T.created_at.desc(), _T.id.desc()))


def issue(principal: Principal, *, workspace_id: str, agent_id: str, version_id: str | None = None,
          ttl_seconds: int | None = None, now: datetime | None = None) -> tuple[WebTokenRecord, str]:
    """The token's record and the token itself, in clear this once. The agent and the version must
    be the workspace's (400 naming the field otherwise), the version the agent's."""
    now = now or utcnow()
    ttl = DEFAULT_TTL_S if ttl_seconds is None else ttl_seconds
    if not MIN_TTL_S <= ttl <= MAX_TTL_S:
        raise InvalidInput(f"ttlSeconds must be {MIN_TTL_S} to {MAX_TTL_S}; {ttl} given.")
    with database.atomic():
        live = Agent.in_workspace(workspace_id, Agent.published_version_id).where(Agent.id == agent_id).tuples().first()
        if live is None:
            raise InvalidInput(f"agentId: no agent {agent_id} in this workspace.")
        if version_id is None:
            version_id = live[0]
            if version_id is None:
                raise Conflict(f"The agent {agent_id} has no live version: publish one, or name versionId.")
        number = (Version.in_workspace(workspace_id, Version.version_number)
                  .where((Version.id == version_id) & (Version.entity_type == Agent.KIND)
                         & (Version.entity_id == agent_id)).scalar())
        if number is None:
            raise InvalidInput(f"versionId: no version {version_id} of the agent {agent_id} in this workspace.")
        token = new_secret(WEB_CALL_TOKEN_PREFIX)
        row = _T.create(workspace=workspace_id, token_hash=digest(token), agent=agent_id, version=version_id,
                        version_number=number, created_by=principal.user_id, created_at=now,
                        expires_at=now + timedelta(seconds=ttl))
    return WebTokenRecord(row.id, workspace_id, agent_id, version_id, number, principal.user_id, now,
                          row.expires_at, None), token


def list_tokens(*, workspace_id: str, limit: int, offset: int) -> Page[WebTokenRecord]:
    return _page().page(WebTokenRecord, workspace_id=workspace_id, limit=limit, offset=offset)


def redeem(token: str, *, now: datetime | None = None) -> Redeemed:
    """What the token names, the version's configuration included; the token is spent. Refused
    (401, one message) if it is not a token of ours, or was spent, or has expired."""
    now = now or utcnow()
    if not isinstance(token, str) or len(token) != _TOKEN_CHARS or not token.startswith(WEB_CALL_TOKEN_PREFIX):
        raise WebTokenRefused()
    hashed = digest(token)
    with database.atomic():
        # Found by its hash in every workspace (the token says which), and spent only if still
        # unspent and unexpired: of two redemptions at once, one updates the row.
        rows = list(_T.update(redeemed_at=now)
                    .where((_T.token_hash == hashed) & _T.redeemed_at.is_null() & (_T.expires_at > now))
                    .returning(_T.id, _T.workspace, _T.agent, _T.version, _T.version_number, _T.token_hash)
                    .tuples().execute())
        if not rows or not matches(token, rows[0][5]):
            raise WebTokenRefused()
        token_id, workspace_id, agent_id, version_id, number, _ = rows[0]
        config = Version.in_workspace(workspace_id, Version.config).where(Version.id == version_id).scalar()
    return Redeemed(token_id, workspace_id, agent_id, version_id, number, config)
