"""Who is calling: turns a bearer secret into a Principal, or refuses it.

Every authenticated request of either server comes through here, so each credential kind is
looked up with one precompiled statement (see models.sql) joining the credential, its user and
the membership that decides its permissions. Nothing is cached between requests: a key that is
deleted or deactivated, a user who is deactivated or removed, a role that changes, all take
effect on the very next request in every process.
"""
from __future__ import annotations

import time
from datetime import datetime

from peewee import DateTimeField

from .db import FrozenListField, utcnow
from .errors import Forbidden, Unauthenticated
from .principal import Principal
from .rate_limits import Limit
from .roles import permissions_of
from .secrets import ACCESS_TOKEN_PREFIX, API_KEY_PREFIX, digest, matches
from .sql import Statement

_API_KEY = Statement('''
    SELECT k.id, k.workspace_id, k.user_id, k.key_hash, k.is_active, k.expires_at, k.permissions,
           k.requests_per_minute, k.requests_per_day, u.is_active, m.role, r.permissions
    FROM api_key k
    JOIN "user" u ON u.id = k.user_id
    LEFT JOIN membership m ON m.workspace_id = k.workspace_id AND m.user_id = k.user_id
    LEFT JOIN workspace_role r ON r.id = m.role AND r.workspace_id = m.workspace_id
    WHERE k.key_hash = {p}''')

# With a workspace named, the membership in it; without, up to two, to tell "the user's only
# workspace" from "several, so none is implied".
_ACCESS_TOKEN = Statement('''
    SELECT t.id, t.user_id, t.token_hash, t.expires_at, u.is_active, m.workspace_id, m.role, r.permissions
    FROM access_token t
    JOIN "user" u ON u.id = t.user_id
    LEFT JOIN membership m ON m.user_id = t.user_id
        AND (CAST({p} AS VARCHAR(255)) IS NULL OR m.workspace_id = {p})
    LEFT JOIN workspace_role r ON r.id = m.role AND r.workspace_id = m.workspace_id
    WHERE t.token_hash = {p}
    LIMIT 2''')

# The columns' own conversions of what either driver returns.
_TIMESTAMP = DateTimeField()
_PERMISSIONS = FrozenListField()


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
    row = _API_KEY.one(digest(secret))
    if row is None or not matches(secret, row[3]):
        raise Unauthenticated("The API key is not valid: it is unknown or was deleted.")
    (key_id, key_workspace, user_id, _, is_active, expires_at, permissions, per_minute, per_day, user_active, role,
     custom) = row
    if not is_active:
        raise Unauthenticated("The API key is inactive.")
    if _TIMESTAMP.python_value(expires_at) <= now:
        raise Unauthenticated("The API key has expired.")
    if not user_active:
        raise Unauthenticated("The user who owns this API key is deactivated.")
    if role is None:
        raise Unauthenticated("The user who owns this API key is no longer a member of its workspace.")
    if workspace_id is not None and workspace_id != key_workspace:
        raise Forbidden("workspaceId does not match the workspace of this API key.")
    return Principal(
        credential_id=key_id, kind="api_key", user_id=user_id, workspace_id=key_workspace,
        permissions=_role(role, custom) & frozenset(_PERMISSIONS.python_value(permissions)),
        rate_limit=None if per_minute is None else Limit(per_minute, per_day),
    )


def _access_token_principal(secret: str, workspace_id: str | None, now: datetime) -> Principal:
    rows = _ACCESS_TOKEN.all(workspace_id, workspace_id, digest(secret))
    if not rows or not matches(secret, rows[0][2]):
        raise Unauthenticated("The access token is not valid: it is unknown or was revoked.")
    token_id, user_id, _, expires_at, user_active, member_of, role, custom = rows[0]
    if expires_at is not None and _TIMESTAMP.python_value(expires_at) <= now:
        raise Unauthenticated("The access token has expired.")
    if not user_active:
        raise Unauthenticated("The user of this access token is deactivated.")
    permissions: frozenset[str] = frozenset()
    if member_of is None:
        if workspace_id is not None:
            raise Forbidden("workspaceId is not a workspace the caller is a member of.")
        raise Unauthenticated("The user of this access token is not a member of any workspace.")
    if workspace_id is not None or len(rows) == 1:
        # Unnamed, the workspace is the user's only one.
        workspace_id, permissions = member_of, _role(role, custom)
    return Principal(
        credential_id=token_id, kind="access_token", user_id=user_id,
        workspace_id=workspace_id, permissions=permissions,
    )


def _role(role: str, custom: str | None) -> frozenset[str]:
    return permissions_of(role, None if custom is None else _PERMISSIONS.python_value(custom))


_TOUCH = {
    "api_key": Statement("UPDATE api_key SET last_used_at = {p} WHERE id = {p}"),
    "access_token": Statement("UPDATE access_token SET last_used_at = {p} WHERE id = {p}"),
}


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
        _TOUCH[principal.kind].execute(now, principal.credential_id)


_last_used = _LastUsed()
