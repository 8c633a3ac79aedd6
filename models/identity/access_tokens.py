"""A user's own access tokens: listed, minted with a token the user holds, revoked.

A token is a person's credential across all their workspaces, so only an access token manages
tokens (an API key, bound to one workspace and a frozen subset of permissions, may not mint a
credential that reaches further). A minted token expires within ``MAX_VALIDITY``; a revoked one
is deleted, and stops on the next request in every process (models.identity.credentials reads it each
time).
"""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import NamedTuple

from peewee import fn

from models.identity.principal import Principal
from models.identity.tables import AccessToken, User
from models.identity.workspaces import require_user_credential
from models.kernel.db import database, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.pagination import Page, PageQuery
from models.kernel.secrets import ACCESS_TOKEN_PREFIX, digest, new_secret

MAX_VALIDITY_DAYS = 90
DEFAULT_VALIDITY_DAYS = 30
MAX_PER_USER = 100
NAME_MAX_CHARS = 100


class TokenRecord(NamedTuple):
    id: str
    user_id: str
    name: str | None
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None


_T = AccessToken
_COLUMNS = (_T.id, _T.user, _T.name, _T.created_at, _T.expires_at, _T.last_used_at)
_PAGE = PageQuery(
    lambda user_id, limit, offset: _T.select(*_COLUMNS).where(_T.user == user_id)
    .order_by(_T.created_at.desc(), _T.id.desc()).limit(limit).offset(offset),
    lambda user_id: _T.select(fn.COUNT(_T.id)).where(_T.user == user_id))


def list_tokens(principal: Principal, *, limit: int, offset: int) -> Page[TokenRecord]:
    require_user_credential(principal, "Listing access tokens")
    return _PAGE.page(TokenRecord, user_id=principal.user_id, limit=limit, offset=offset)


def mint(principal: Principal, *, name: str | None = None, valid_for_days: int = DEFAULT_VALIDITY_DAYS,
         now: datetime | None = None) -> tuple[TokenRecord, str]:
    """A new token of the caller, and its secret (shown once)."""
    require_user_credential(principal, "Minting an access token")
    if not 1 <= valid_for_days <= MAX_VALIDITY_DAYS:
        raise InvalidInput(f"expiresInDays must be from 1 to {MAX_VALIDITY_DAYS}.")
    if name is not None:
        name = name.strip()
        if not 1 <= len(name) <= NAME_MAX_CHARS:
            raise InvalidInput(f"name must be 1 to {NAME_MAX_CHARS} characters once trimmed; {len(name)} given.")
    now = now or utcnow()
    secret = new_secret(ACCESS_TOKEN_PREFIX)
    with database.atomic():
        User.update(id=User.id).where(User.id == principal.user_id).execute()  # orders this user's mints
        live = _T.select().where((_T.user == principal.user_id)
                                 & (_T.expires_at.is_null() | (_T.expires_at > now))).count()
        if live >= MAX_PER_USER:
            raise Conflict(f"A user holds at most {MAX_PER_USER} unexpired access tokens; revoke one first.")
        row = _T.create(user=principal.user_id, token_hash=digest(secret), name=name, created_at=now,
                        expires_at=now + timedelta(days=valid_for_days))
    return TokenRecord(row.id, principal.user_id, row.name, row.created_at, row.expires_at, None), secret


def revoke(principal: Principal, *, token_id: str) -> None:
    require_user_credential(principal, "Revoking an access token")
    if not _T.delete().where((_T.id == token_id) & (_T.user == principal.user_id)).execute():
        raise NotFound(f"No access token {token_id} of the caller.")
