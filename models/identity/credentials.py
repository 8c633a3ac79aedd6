"""Who is calling: turns a bearer secret into a Principal, or refuses it.

Every authenticated request of either server comes through here, so each credential kind is
looked up with one precompiled statement (see models.kernel.sql) joining the credential, its user and
the membership that decides its permissions. Nothing is cached between requests: a key that is
deleted or deactivated, a user who is deactivated or removed, a role that changes, all take
effect on the very next request in every process.

On PostgreSQL a request's admission is a single round trip (``authenticate_and_count``): the
lookup and the rate-limit upsert of models.identity.rate_limits in one statement, the upsert in a WITH
that counts only the credential the lookup admits. A round trip costs the API process more
than the statement costs the database (the thread blocked on it must wake and win the GIL back),
so a new per-request check belongs in this statement, not beside it. SQLite, which cannot put
an INSERT in a WITH, runs the two statements in-process.
"""
from __future__ import annotations

import time
from datetime import datetime, timezone

from peewee import DateTimeField

from models.identity.principal import Principal
from models.identity.rate_limits import NO_FLUSH, Decision, Limit, Policy, consume, counting_upsert, decide, windows
from models.identity.roles import permissions_of
from models.kernel.db import FrozenListField, is_postgres, utcnow
from models.kernel.errors import Forbidden, Unauthenticated
from models.kernel.secrets import ACCESS_TOKEN_PREFIX, API_KEY_PREFIX, digest, matches
from models.kernel.sql import Statement

_API_KEY_ROW = '''
    SELECT k.id, k.workspace_id, k.user_id, k.key_hash, k.is_active, k.expires_at, k.permissions,
           k.requests_per_minute, k.requests_per_day, u.is_active AS user_active, m.role, r.permissions AS custom
    FROM api_key k
    JOIN "user" u ON u.id = k.user_id
    LEFT JOIN membership m ON m.workspace_id = k.workspace_id AND m.user_id = k.user_id
    LEFT JOIN workspace_role r ON r.id = m.role AND r.workspace_id = m.workspace_id
    WHERE k.key_hash = {p}'''
_API_KEY = Statement(_API_KEY_ROW)

# With a workspace named, the membership in it; without, up to two, to tell "the user's only
# workspace" from "several, so none is implied". A membership counts only for a token created
# after the user last left that workspace: a removed member's old tokens never act there again,
# re-invited or not, and still act in their other workspaces.
_ACCESS_TOKEN_ROWS = '''
    SELECT t.id, t.user_id, t.token_hash, t.expires_at, u.is_active AS user_active, m.workspace_id, m.role,
           r.permissions AS custom
    FROM access_token t
    JOIN "user" u ON u.id = t.user_id
    LEFT JOIN membership m ON m.user_id = t.user_id
        AND (CAST({p} AS VARCHAR(255)) IS NULL OR m.workspace_id = {p})
        AND (m.tokens_since IS NULL OR t.created_at > m.tokens_since)
    LEFT JOIN workspace_role r ON r.id = m.role AND r.workspace_id = m.workspace_id
    WHERE t.token_hash = {p}
    LIMIT 2'''
_ACCESS_TOKEN = Statement(_ACCESS_TOKEN_ROWS)

def _counted(rows: str, admitted: str, per_minute: str, per_day: str) -> Statement:
    """On PostgreSQL the lookup and the rate-limit count in one statement, one round trip: the
    credential's ``rows``, then (WITH) the upsert of models.identity.rate_limits for the credential that
    ``admitted`` (credential_id, minute, day) selects from them. Its conditions are those the
    Python below checks, so what Python refuses is not counted; should they ever part, a request
    admitted here but not counted is refused (rate_limits.decide reads no hits as a refusal),
    never let through uncounted."""
    return Statement(f'''
        WITH c AS ({rows}), admitted AS ({admitted}), counted AS ({counting_upsert("SELECT * FROM admitted",
                                                                                     per_minute, per_day)})
        SELECT c.*, counted.minute_hits, counted.day_hits FROM c LEFT JOIN counted ON TRUE''', pg_prefix=NO_FLUSH)


# A key's own limit, else the platform's default (given as parameters); none at all: not counted.
_API_KEY_COUNTED = _counted(_API_KEY_ROW, '''
    SELECT * FROM (
        SELECT c.id AS credential_id, CAST({p} AS BIGINT) AS minute, CAST({p} AS BIGINT) AS day,
               CASE WHEN c.requests_per_minute IS NULL THEN CAST({p} AS INTEGER) ELSE c.requests_per_minute END
                   AS per_minute,
               CASE WHEN c.requests_per_minute IS NULL THEN CAST({p} AS INTEGER) ELSE c.requests_per_day END
                   AS per_day
        FROM c
        WHERE c.is_active AND c.expires_at > {p} AND c.user_active AND c.role IS NOT NULL
          AND (CAST({p} AS VARCHAR(255)) IS NULL OR c.workspace_id = {p})) AS limited
    WHERE per_minute IS NOT NULL''', "(SELECT per_minute FROM admitted)", "(SELECT per_day FROM admitted)")

# A token has the platform's default limit.
_ACCESS_TOKEN_COUNTED = _counted(_ACCESS_TOKEN_ROWS, '''
    SELECT c.id AS credential_id, CAST({p} AS BIGINT) AS minute, CAST({p} AS BIGINT) AS day
    FROM c
    WHERE (c.expires_at IS NULL OR c.expires_at > {p}) AND c.user_active AND c.workspace_id IS NOT NULL
    LIMIT 1''', "CAST({p} AS INTEGER)", "CAST({p} AS INTEGER)")

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
        principal = _api_key_principal(secret, _API_KEY.one(digest(secret)), workspace_id, now)
    elif secret.startswith(ACCESS_TOKEN_PREFIX):
        principal = _access_token_principal(secret, _ACCESS_TOKEN.all(workspace_id, workspace_id, digest(secret)),
                                            workspace_id, now)
    else:
        raise Unauthenticated("The bearer credential is not an access token or API key of this service.")
    _last_used.touch(principal, now)
    return principal


def authenticate_and_count(secret: str, *, workspace_id: str | None, policy: Policy) -> tuple[Principal, Decision | None]:
    """``authenticate``, then the request counted against the credential's limit under ``policy``
    (models.identity.rate_limits.consume): None when no limit applies. One statement on PostgreSQL,
    two on SQLite, whose INSERT cannot stand in a WITH."""
    clock = time.time()
    now = datetime.fromtimestamp(clock, timezone.utc).replace(tzinfo=None)
    minute, day = windows(clock)
    default = policy.default if policy.enabled else None
    rows = None
    if not is_postgres():
        pass
    elif policy.enabled and secret.startswith(API_KEY_PREFIX):
        rows = _API_KEY_COUNTED.all(digest(secret), minute, day, default and default.per_minute,
                                    default and default.per_day, now, workspace_id, workspace_id)
        principal = _api_key_principal(secret, rows[0][:-2] if rows else None, workspace_id, now)
    elif default is not None and secret.startswith(ACCESS_TOKEN_PREFIX):
        rows = _ACCESS_TOKEN_COUNTED.all(workspace_id, workspace_id, digest(secret), minute, day, now,
                                         default.per_minute, default.per_day)
        principal = _access_token_principal(secret, [row[:-2] for row in rows], workspace_id, now)
    if rows is None:  # two statements: the lookup, then the count
        principal = authenticate(secret, workspace_id=workspace_id, now=now)
    else:
        _last_used.touch(principal, now)
    limit = policy.limit_for(principal.rate_limit)
    if limit is None:
        return principal, None
    if rows is None:
        return principal, consume(principal.credential_id, limit, now=clock)
    hits = rows[0][-2:]
    return principal, decide(principal.credential_id, limit, None if hits[0] is None else hits, clock)


def _api_key_principal(secret: str, row, workspace_id: str | None, now: datetime) -> Principal:
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


def _access_token_principal(secret: str, rows: list, workspace_id: str | None, now: datetime) -> Principal:
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
