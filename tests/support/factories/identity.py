"""Identity: workspaces, their members and credentials (access tokens, API keys).

An ``Actor`` holds the ids and the bearer secret a test acts with; ``principal`` is who the other
factories act as when the domain asks for one (an owner).
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from models.identity.accounts import add_member, bootstrap_workspace, issue_access_token
from models.identity.api_keys import create_api_key
from models.identity.permissions import ROLES
from models.identity.principal import Principal
from models.identity.rate_limits import Limit
from models.identity.tables import AccessToken, ApiKey
from models.kernel.db import session, utcnow


@dataclass
class Actor:
    """A user acting in a workspace with one credential."""
    workspace_id: str
    user_id: str
    email: str
    secret: str

    @property
    def headers(self) -> dict:
        return {"Authorization": f"Bearer {self.secret}"}

    def with_secret(self, secret: str) -> "Actor":
        return Actor(self.workspace_id, self.user_id, self.email, secret)


def _email(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}@example.com"


def workspace(name: str = "acme", *, display_name: str = "Owner") -> Actor:
    """A new workspace and its owner, acting with an access token."""
    email = _email("owner")
    with session():
        ws, user = bootstrap_workspace(workspace_name=name, email=email, display_name=display_name)
        _, secret = issue_access_token(email=email)
    return Actor(ws.id, user.id, email, secret)


def member(owner: Actor, role: str) -> Actor:
    """A new user with ``role`` in the owner's workspace, acting with an access token."""
    email = _email(role)
    with session():
        user = add_member(workspace_id=owner.workspace_id, email=email, role=role)
        _, secret = issue_access_token(email=email)
    return Actor(owner.workspace_id, user.id, email, secret)


def api_key(actor: Actor, *, permissions: list[str] | None = None, rate_limit: Limit | None = None,
            expires_at: datetime | None = None, name: str = "test key", **columns) -> Actor:
    """An API key of ``actor``'s user (permissions default to its role's), acting as that key.

    ``columns`` are stored as given after creation, to make states the API cannot (an expired or
    inactive key): ``expires_at`` in the past, ``is_active=False``.
    """
    with session():
        key, secret = create_api_key(principal(actor), workspace_id=actor.workspace_id, name=name, user_id=actor.user_id,
                                     rate_limit=rate_limit, permissions=permissions)
        changes = dict(columns, **({"expires_at": expires_at} if expires_at else {}))
        if changes:
            ApiKey.update(**changes).where(ApiKey.id == key.id).execute()
    return actor.with_secret(secret)


def expire_tokens(actor: Actor) -> None:
    with session():
        AccessToken.update(expires_at=utcnow() - timedelta(seconds=1)).where(AccessToken.user == actor.user_id).execute()


def principal(actor: Actor) -> Principal:
    return Principal("factory", "access_token", actor.user_id, actor.workspace_id, ROLES["owner"])
