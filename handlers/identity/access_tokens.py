"""The caller's access tokens: listAccessTokens, createAccessToken, revokeAccessToken."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import deleted, iso
from models.identity import access_tokens
from models.identity.access_tokens import TokenRecord


def token_shape(record: TokenRecord, current_id: str) -> dict:
    return {"id": record.id, "name": record.name, "createdAt": iso(record.created_at),
            "expiresAt": iso(record.expires_at), "lastUsedAt": iso(record.last_used_at),
            "current": record.id == current_id}


def list_access_tokens(principal, limit: int = 20, offset: int = 0):
    page = access_tokens.list_tokens(principal, limit=limit, offset=offset)
    return ok({"accessTokens": [token_shape(t, principal.credential_id) for t in page.items],
               "pagination": page.pagination()})


def create_access_token(body: dict, principal):
    record, secret = access_tokens.mint(principal, name=body.get("name"),
                                        valid_for_days=body.get("expiresInDays", access_tokens.DEFAULT_VALIDITY_DAYS))
    return ok({"accessToken": {**token_shape(record, principal.credential_id), "token": secret}},
              "Access token created; it is shown this once")


def revoke_access_token(tokenId: str, principal):
    access_tokens.revoke(principal, token_id=tokenId)
    return deleted(tokenId, "Access token revoked; it stops working at once")
