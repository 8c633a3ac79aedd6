"""API keys: frozen permissions, a mandatory expiry, an optional own rate limit."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from peewee import BooleanField, CharField, DateTimeField, ForeignKeyField, IntegerField, TextField

from .db import BaseModel, JSONField, database, isoformat, utcnow
from .errors import Forbidden, InvalidInput, NotFound
from .identity import Membership, User, Workspace, new_id
from .pagination import Page, paginate
from .permissions import ordered, role_permissions, unknown
from .rate_limits import Limit, forget
from .secrets import API_KEY_PREFIX, digest, new_secret

DEFAULT_VALIDITY = timedelta(days=90)
MAX_VALIDITY = timedelta(days=365)
MAX_IDS_PER_DELETE = 100
MANAGE_OTHERS = "api-keys:manage-others"


class ApiKey(BaseModel):
    id = CharField(primary_key=True, default=new_id)
    workspace = ForeignKeyField(Workspace, on_delete="CASCADE", backref="api_keys")
    # The user the key acts for; its permissions can never exceed this user's role.
    user = ForeignKeyField(User, on_delete="CASCADE", backref="api_keys")
    name = TextField()
    # SHA-256 of the secret; the secret is returned once, by create, and never stored.
    key_hash = CharField(unique=True)
    is_active = BooleanField(default=True)
    created_at = DateTimeField(default=utcnow)
    last_used_at = DateTimeField(null=True)
    # Set once at creation; nothing updates it.
    expires_at = DateTimeField()
    requests_per_minute = IntegerField(null=True)
    requests_per_day = IntegerField(null=True)
    # Frozen at creation; effective permissions are these intersected with the user's current role.
    permissions = JSONField()

    def own_rate_limit(self) -> Limit | None:
        if self.requests_per_minute is None:
            return None
        return Limit(self.requests_per_minute, self.requests_per_day)

    def to_api(self) -> dict:
        body = {
            "id": self.id,
            "workspaceId": self.workspace_id,
            "userId": self.user_id,
            "name": self.name,
            "isActive": self.is_active,
            "createdAt": isoformat(self.created_at),
            "lastUsedAt": isoformat(self.last_used_at),
            "expiresAt": isoformat(self.expires_at),
            "permissions": ordered(self.permissions),
            "creator": {"id": self.user.id, "email": self.user.email, "displayName": self.user.display_name},
        }
        if self.requests_per_minute is not None:
            body["rateLimit"] = {"requestsPerMinute": self.requests_per_minute, "requestsPerDay": self.requests_per_day}
        return body


def create_api_key(
    principal, *, workspace_id: str, name: str, user_id: str, expires_at: str | None = None,
    rate_limit: dict | None = None, permissions: list[str] | None = None, now: datetime | None = None,
) -> tuple[ApiKey, str]:
    """Create a key for ``user_id`` in ``workspace_id``; returns the row and its secret (shown once)."""
    now = now or utcnow()
    expiry = _expiry(expires_at, now)
    if user_id != principal.user_id and MANAGE_OTHERS not in principal.permissions:
        raise Forbidden(f"Creating an API key for another user needs the permission {MANAGE_OTHERS}.")
    owner = (Membership.select(Membership, User).join(User)
             .where((Membership.workspace == workspace_id) & (Membership.user == user_id)).first())
    if owner is None or not owner.user.is_active:
        raise InvalidInput("userId is not an active member of this workspace.")
    # A key can hold neither more than its user's role nor more than the credential creating it.
    grantable = role_permissions(owner.role) & principal.permissions
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
        requests_per_minute=rate_limit["requestsPerMinute"] if rate_limit else None,
        requests_per_day=rate_limit["requestsPerDay"] if rate_limit else None,
    )
    key.user = owner.user
    return key, secret


def list_api_keys(principal, *, workspace_id: str, limit: int, offset: int) -> Page:
    query = (_visible(principal, workspace_id)
             .order_by(ApiKey.created_at.desc(), ApiKey.id))
    return paginate(query, limit=limit, offset=offset)


def get_api_key(principal, *, workspace_id: str, key_id: str) -> ApiKey:
    key = _visible(principal, workspace_id).where(ApiKey.id == key_id).first()
    if key is None:
        raise NotFound(f"No API key {key_id} in this workspace.")
    return key


def delete_api_keys(principal, *, workspace_id: str, ids: str) -> int:
    """Delete the listed keys the caller may see in ``workspace_id``; others are skipped, not counted."""
    wanted = list(dict.fromkeys(part.strip() for part in ids.split(",") if part.strip()))
    if not wanted:
        raise InvalidInput("ids must list at least one API key id, separated by commas.")
    if len(wanted) > MAX_IDS_PER_DELETE:
        raise InvalidInput(f"ids lists {len(wanted)} ids; at most {MAX_IDS_PER_DELETE} may be deleted at once.")
    with database.atomic():
        found = [k.id for k in _visible(principal, workspace_id).where(ApiKey.id.in_(wanted))]
        if not found:
            return 0
        deleted = ApiKey.delete().where(ApiKey.id.in_(found)).execute()
        forget(found)
    return deleted


def _visible(principal, workspace_id: str):
    query = ApiKey.select(ApiKey, User).join(User).where(ApiKey.workspace == workspace_id)
    if MANAGE_OTHERS not in principal.permissions:
        query = query.where(ApiKey.user == principal.user_id)
    return query


def _expiry(expires_at: str | None, now: datetime) -> datetime:
    if expires_at is None:
        return now + DEFAULT_VALIDITY
    try:
        parsed = datetime.fromisoformat(expires_at)
    except ValueError:
        raise InvalidInput("expiresAt must be an ISO 8601 date-time, such as 2030-01-31T12:00:00Z.") from None
    if parsed.tzinfo is None:
        raise InvalidInput("expiresAt must carry a time zone offset, such as Z or +02:00.")
    try:
        expiry = parsed.astimezone(timezone.utc).replace(tzinfo=None)
    except OverflowError:  # year 1 or 9999 shifted past the calendar's ends
        raise InvalidInput("expiresAt must be in the future and at most 365 days from now.") from None
    if expiry <= now:
        raise InvalidInput("expiresAt must be in the future.")
    if expiry > now + MAX_VALIDITY:
        raise InvalidInput("expiresAt must be at most 365 days from now.")
    return expiry
