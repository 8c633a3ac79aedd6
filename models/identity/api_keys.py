"""API keys: frozen permissions, a mandatory expiry, an optional own rate limit."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import NamedTuple

from peewee import SQL, fn

from models.identity.permissions import ordered, unknown
from models.identity.principal import Principal
from models.identity.rate_limits import Limit, forget
from models.identity.roles import granted_by
from models.identity.tables import ApiKey, Membership, User
from models.kernel.db import database, utcnow
from models.kernel.errors import Forbidden, InvalidInput, NotFound
from models.kernel.pagination import Page, PageQuery
from models.kernel.secrets import API_KEY_PREFIX, digest, new_secret
from models.kernel.sql import Prepared

DEFAULT_VALIDITY = timedelta(days=90)
MAX_VALIDITY = timedelta(days=365)
MANAGE_OTHERS = "api-keys:manage-others"


class ApiKeyRecord(NamedTuple):
    """What reads of a key return: its columns and its user's, never its hash."""
    id: str
    workspace_id: str
    user_id: str
    name: str
    is_active: bool
    created_at: datetime
    last_used_at: datetime | None
    expires_at: datetime
    permissions: tuple[str, ...]
    requests_per_minute: int | None
    requests_per_day: int | None
    user_email: str
    user_display_name: str | None

    @property
    def rate_limit(self) -> Limit | None:
        if self.requests_per_minute is None:
            return None
        return Limit(self.requests_per_minute, self.requests_per_day)


_COLUMNS = (ApiKey.id, ApiKey.workspace, ApiKey.user, ApiKey.name, ApiKey.is_active, ApiKey.created_at,
            ApiKey.last_used_at, ApiKey.expires_at, ApiKey.permissions, ApiKey.requests_per_minute,
            ApiKey.requests_per_day, User.email, User.display_name)


def _keys(workspace_id, user_id=None):
    """The keys of a workspace with their users; only ``user_id``'s when given."""
    query = ApiKey.in_workspace(workspace_id, *_COLUMNS).join(User)
    return query if user_id is None else query.where(ApiKey.user == user_id)


_NEWEST_FIRST = (ApiKey.created_at.desc(), ApiKey.id.desc())
_COUNT = fn.COUNT(SQL("1"))
# One of each shape: every key of the workspace, or the caller's own.
_PAGE = {
    True: PageQuery(lambda workspace_id, limit, offset:
                    _keys(workspace_id).order_by(*_NEWEST_FIRST).limit(limit).offset(offset),
                    lambda workspace_id: ApiKey.in_workspace(workspace_id, _COUNT)),
    False: PageQuery(lambda workspace_id, user_id, limit, offset:
                     _keys(workspace_id, user_id).order_by(*_NEWEST_FIRST).limit(limit).offset(offset),
                     lambda workspace_id, user_id: ApiKey.in_workspace(workspace_id, _COUNT)
                     .where(ApiKey.user == user_id)),
}
_ONE = {
    True: Prepared(lambda workspace_id, key_id: _keys(workspace_id).where(ApiKey.id == key_id)),
    False: Prepared(lambda workspace_id, user_id, key_id: _keys(workspace_id, user_id).where(ApiKey.id == key_id)),
}


def create_api_key(
    principal: Principal, *, workspace_id: str, name: str, user_id: str, expires_at: datetime | None = None,
    rate_limit: Limit | None = None, permissions: list[str] | None = None, now: datetime | None = None,
) -> tuple[ApiKeyRecord, str]:
    """Create a key for ``user_id`` in ``workspace_id``; returns the row and its secret (shown once).

    ``expires_at`` is timezone-aware; None means the default validity.
    """
    now = now or utcnow()
    expiry = _expiry(expires_at, now)
    if user_id != principal.user_id and MANAGE_OTHERS not in principal.permissions:
        raise Forbidden(f"Creating an API key for another user needs the permission {MANAGE_OTHERS}.")
    owner = (Membership.select(Membership, User).join(User)
             .where((Membership.workspace == workspace_id) & (Membership.user == user_id)).first())
    if owner is None or not owner.user.is_active:
        raise InvalidInput("userId is not an active member of this workspace.")
    # A key can hold neither more than its user's role nor more than the credential creating it.
    grantable = granted_by(workspace_id, owner.role) & principal.permissions
    if permissions is None:
        frozen = ordered(grantable)
    else:
        if bad := unknown(permissions):
            raise InvalidInput(f"permissions: {', '.join(bad)} is not in the permission catalog.")
        if missing := ordered(set(permissions) - grantable):
            raise Forbidden(f"permissions: the creator does not hold {', '.join(missing)}.")
        frozen = ordered(permissions)
    secret = new_secret(API_KEY_PREFIX)
    key = ApiKey.create(
        workspace=workspace_id, user=owner.user, name=name, key_hash=digest(secret), created_at=now,
        expires_at=expiry, permissions=frozen,
        requests_per_minute=rate_limit.per_minute if rate_limit else None,
        requests_per_day=rate_limit.per_day if rate_limit else None,
    )
    return ApiKeyRecord(
        id=key.id, workspace_id=workspace_id, user_id=owner.user.id, name=name, is_active=True, created_at=now,
        last_used_at=None, expires_at=expiry, permissions=tuple(frozen),
        requests_per_minute=key.requests_per_minute, requests_per_day=key.requests_per_day,
        user_email=owner.user.email, user_display_name=owner.user.display_name,
    ), secret


def list_api_keys(principal: Principal, *, workspace_id: str, limit: int, offset: int) -> Page[ApiKeyRecord]:
    """The keys the caller may see, newest first."""
    every, own = _visibility(principal)
    return _PAGE[every].page(ApiKeyRecord, limit=limit, offset=offset, workspace_id=workspace_id, **own)


def get_api_key(principal: Principal, *, workspace_id: str, key_id: str) -> ApiKeyRecord:
    every, own = _visibility(principal)
    key = _ONE[every].first(ApiKeyRecord, workspace_id=workspace_id, key_id=key_id, **own)
    if key is None:
        raise NotFound(f"No API key {key_id} in this workspace.")
    return key


def delete_api_keys(principal: Principal, *, workspace_id: str, ids: list[str]) -> int:
    """Delete the listed keys the caller may see in ``workspace_id``; others are skipped, not counted."""
    wanted = list(dict.fromkeys(ids))
    with database.atomic():
        visible = ApiKey.in_workspace(workspace_id, ApiKey.id).where(ApiKey.id.in_(wanted))
        every, own = _visibility(principal)
        if not every:
            visible = visible.where(ApiKey.user == own["user_id"])
        found = [k.id for k in visible]
        if not found:
            return 0
        deleted = ApiKey.delete().where(ApiKey.id.in_(found)).execute()
        forget(found)
    return deleted


def _visibility(principal: Principal) -> tuple[bool, dict]:
    """Which keys the caller sees: every key of the workspace with api-keys:manage-others, else
    its own; as the shape key of the prepared queries and the parameters they then take."""
    if MANAGE_OTHERS in principal.permissions:
        return True, {}
    return False, {"user_id": principal.user_id}


def _expiry(expires_at: datetime | None, now: datetime) -> datetime:
    if expires_at is None:
        return now + DEFAULT_VALIDITY
    if expires_at.tzinfo is None:
        raise InvalidInput("expiresAt must carry a time zone offset, such as Z or +02:00.")
    try:
        expiry = expires_at.astimezone(timezone.utc).replace(tzinfo=None)
    except OverflowError:  # year 1 or 9999 shifted past the calendar's ends
        raise InvalidInput("expiresAt must be in the future and at most 365 days from now.") from None
    if expiry <= now:
        raise InvalidInput("expiresAt must be in the future.")
    if expiry > now + MAX_VALIDITY:
        raise InvalidInput("expiresAt must be at most 365 days from now.")
    return expiry
