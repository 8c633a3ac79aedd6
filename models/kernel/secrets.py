"""Secret values (access tokens, API keys, invitation tokens, web-call tokens, share links): made here, stored only as hashes, compared in constant time."""
from __future__ import annotations

import hashlib
import hmac
import secrets

ACCESS_TOKEN_PREFIX = "vat_"
API_KEY_PREFIX = "vak_"
INVITATION_PREFIX = "vai_"
WEB_CALL_TOKEN_PREFIX = "vaw_"
SHARE_LINK_PREFIX = "vas_"


def new_secret(prefix: str) -> str:
    # 32 random bytes: a plain SHA-256 is then as good as a slow hash, and lookups stay fast.
    return prefix + secrets.token_urlsafe(32)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def matches(secret: str, stored_digest: str) -> bool:
    return hmac.compare_digest(digest(secret), stored_digest)
