"""Who a request acts as: the value admission hands to every domain function."""
from __future__ import annotations

from dataclasses import dataclass

from models.identity.rate_limits import Limit


@dataclass(frozen=True)
class Principal:
    credential_id: str
    kind: str  # "access_token", "api_key" or "signing_secret"
    user_id: str
    # The workspace the request acts in: an API key's own, or the one a token's user named.
    workspace_id: str | None
    # The member's role, intersected with an API key's frozen permissions.
    permissions: frozenset[str]
    # The credential's own rate limit; None means the platform default applies.
    rate_limit: Limit | None = None
    # A signed webhook's webhook-id (its signature covers it): what a replay of it repeats.
    webhook_id: str | None = None
