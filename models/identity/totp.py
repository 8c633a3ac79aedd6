"""Time-based one-time passwords (RFC 6238 over RFC 4226's HOTP): HMAC-SHA1, 30 s steps, 6
digits, the codes of one step either side of now accepted for clocks that drift.

The standard library's hmac does it in a few lines that the RFCs' test vectors check
(tests/models/test_totp.py); the time is a parameter, so that tests fix it.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import struct
from urllib.parse import quote, urlencode

STEP_S = 30
DIGITS = 6
WINDOW = 1  # steps accepted before and after the current one
SECRET_BYTES = 20  # 160 bits, as RFC 4226 recommends for HMAC-SHA1


def new_secret() -> str:
    """A random secret in base32 without padding, as authenticator apps take it."""
    return base64.b32encode(secrets.token_bytes(SECRET_BYTES)).decode().rstrip("=")


def _key(secret: str) -> bytes:
    return base64.b32decode(secret + "=" * (-len(secret) % 8), casefold=True)


def step_of(now: float) -> int:
    return int(now // STEP_S)


def code_at(secret: str, step: int) -> str:
    """The code of ``step`` (RFC 4226's HOTP with the step as the counter)."""
    mac = hmac.new(_key(secret), struct.pack(">Q", step), hashlib.sha1).digest()
    offset = mac[-1] & 0x0F
    value = struct.unpack(">I", mac[offset:offset + 4])[0] & 0x7FFFFFFF
    return str(value % 10 ** DIGITS).zfill(DIGITS)


def matching_step(secret: str, code: str, now: float) -> int | None:
    """The step within the window whose code ``code`` is, or None. Every step of the window is
    compared (in constant time), so that how long it takes says nothing of which matched."""
    current = step_of(now)
    found = None
    for step in range(current - WINDOW, current + WINDOW + 1):
        if hmac.compare_digest(code_at(secret, step), code) and found is None:
            found = step
    return found


def provisioning_uri(secret: str, *, account: str, issuer: str) -> str:
    """The otpauth:// URI an authenticator app reads (from a QR code) to add the secret."""
    label = quote(f"{issuer}:{account}", safe="@:")
    query = urlencode({"secret": secret, "issuer": issuer, "algorithm": "SHA1", "digits": DIGITS,
                       "period": STEP_S})
    return f"otpauth://totp/{label}?{query}"
