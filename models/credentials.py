"""Who is calling: turns a bearer secret into a Principal, or refuses it."""
from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime

from .api_keys import ApiKey
from .db import utcnow
from .errors import Forbidden, Unauthenticated
from .identity import AccessToken, Membership, User
from .permissions import role_permissions
from .rate_limits import Limit
from .secrets import ACCESS_TOKEN_PREFIX, API_KEY_PREFIX, digest, matches


@dataclass(frozen=True)
class Principal:
    credential_id: str
    kind: str  # "access_token" or "api_key"
    user_id: str
    # The workspace the request acts in: an API key's own, or the one a token's user named.
    workspace_id: str | None
    # The member's role, intersected with an API key's frozen permissions.
    permissions: frozenset[str]
    # The credential's own rate limit; None means the platform default applies.
    rate_limit: Limit | None = None


def authenticate(secret: str, *, workspace_id: str | None = None, now: datetime | None = None) -> Principal:
    """The principal behind ``secret``, acting in ``workspace_id`` when given.

    Raises Unauthenticated for a credential that is unknown, expired, deleted or inactive, and
    Forbidden when ``workspace_id`` is not a workspace of the caller.
    """
    now = now or utcnow()
    if secret.startswith(API_KEY_PREFIX):
        principal = _api_key_principal(secret, workspace_id, now)
    elif secret.startswith(ACCESS_TOKEN_PREFIX):
        principal = _access_token_principal(secret, workspace_id, now)
    else:
        raise Unauthenticated("The bearer credential is not an access token or API key of this service.")
    _last_used.touch(principal, now)
    return principal


def _api_key_principal(secret: str, workspace_id: str | None, now: datetime) -> Principal:
    key = ApiKey.select(ApiKey, User).join(User).where(ApiKey.key_hash == digest(secret)).first()
    if key is None or not matches(secret, key.key_hash):
        raise Unauthenticated("The API key is not valid: it is unknown or was deleted.")
    if not key.is_active:
        raise Unauthenticated("The API key is inactive.")
    if key.expires_at <= now:
        raise Unauthenticated("The API key has expired.")
    if not key.user.is_active:
        raise Unauthenticated("The user who owns this API key is deactivated.")
    membership = Membership.get_or_none(workspace=key.workspace_id, user=key.user_id)
    if membership is None:
        raise Unauthenticated("The user who owns this API key is no longer a member of its workspace.")
    if workspace_id is not None and workspace_id != key.workspace_id:
        raise Forbidden("workspaceId does not match the workspace of this API key.")
    return Principal(
        credential_id=key.id, kind="api_key", user_id=key.user_id, workspace_id=key.workspace_id,
        permissions=role_permissions(membership.role) & frozenset(key.permissions),
        rate_limit=key.own_rate_limit(),
    )


def _access_token_principal(secret: str, workspace_id: str | None, now: datetime) -> Principal:
    token = AccessToken.select(AccessToken, User).join(User).where(AccessToken.token_hash == digest(secret)).first()
    if token is None or not matches(secret, token.token_hash):
        raise Unauthenticated("The access token is not valid: it is unknown or was revoked.")
    if token.expires_at is not None and token.expires_at <= now:
        raise Unauthenticated("The access token has expired.")
    if not token.user.is_active:
        raise Unauthenticated("The user of this access token is deactivated.")
    permissions: frozenset[str] = frozenset()
    if workspace_id is not None:
        membership = Membership.get_or_none(workspace=workspace_id, user=token.user_id)
        if membership is None:
            raise Forbidden("workspaceId is not a workspace the caller is a member of.")
    else:
        # Unnamed, the workspace is the user's only one; a user of none has nothing to act in.
        memberships = list(Membership.select().where(Membership.user == token.user_id).limit(2))
        if not memberships:
            raise Unauthenticated("The user of this access token is not a member of any workspace.")
        membership = memberships[0] if len(memberships) == 1 else None
    if membership is not None:
        workspace_id = membership.workspace_id
        permissions = role_permissions(membership.role)
    return Principal(
        credential_id=token.id, kind="access_token", user_id=token.user_id,
        workspace_id=workspace_id, permissions=permissions,
    )


class _LastUsed:
    """Keeps lastUsedAt current to within a minute with one write per credential per minute.

    Writing on every request would turn each authenticated read into a write.
    """

    INTERVAL_S = 60.0

    def __init__(self) -> None:
        self._written: dict[str, float] = {}

    def touch(self, principal: Principal, now: datetime) -> None:
        mono = time.monotonic()
        if mono - self._written.get(principal.credential_id, -self.INTERVAL_S) < self.INTERVAL_S:
            return
        self._written[principal.credential_id] = mono
        model = ApiKey if principal.kind == "api_key" else AccessToken
        model.update(last_used_at=now).where(model.id == principal.credential_id).execute()


_last_used = _LastUsed()
