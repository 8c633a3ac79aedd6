"""Per-workspace signing secrets for the webhooks the call runtime sends (Standard Webhooks).

The call runtime signs each end-of-call-report with the workspace's secret, as the Standard
Webhooks specification says (headers ``webhook-id``, ``webhook-timestamp``, ``webhook-signature``
holding ``v1,<base64 HMAC-SHA256 of id.timestamp.body>``). The headers are parsed here as strictly
as the standard's reference does (the ``standardwebhooks`` package itself takes ``+1700000000`` or
``1.7e9`` for a timestamp), the signature computed by that package and compared in constant time,
within five minutes either side of the server's clock. The outbound webhooks sign the same way,
so one convention serves both directions. A signed report's webhook-id is remembered longer than
that window (models.webhooks.replays), so that a replay of it is known.

A secret is shown once, when it is made; it is stored encrypted (models.kernel.encryption), since
verifying needs the secret itself. Making a new one rotates: the one it replaces keeps verifying
for a grace period, so the runtime can switch without dropping reports.
"""
from __future__ import annotations

import base64
import hmac
import re
import secrets
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from standardwebhooks.webhooks import Webhook

from models.identity.principal import Principal
from models.kernel import encryption
from models.kernel.db import database, utcnow
from models.kernel.errors import Unauthenticated
from models.kernel.scoping import Workspace
from models.webhooks.tables import SigningSecret

SECRET_PREFIX = "whsec_"
MAX_GRACE_S = 7 * 24 * 3600
DEFAULT_GRACE_S = 24 * 3600
# A workspace keeps its current secret and at most this many still in their grace period.
_MAX_KEPT = 5
# Standard Webhooks' tolerance either side of the server's clock.
TOLERANCE_S = 5 * 60
WEBHOOK_ID_MAX_CHARS = 256
_WEBHOOK_ID = re.compile(rf"[\x21-\x7e]{{1,{WEBHOOK_ID_MAX_CHARS}}}")
_OUTSIDE_WINDOW = "webhook-timestamp must be the Unix time in seconds, within 5 minutes of the server's clock."
# ASCII digits: [0-9], not \d, which takes every script's digits.
_TIMESTAMP = re.compile(r"[0-9]+")
# Standard base64, padded: what the reference decodes without correcting anything.
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


class SecretRecord(NamedTuple):
    id: str
    workspace_id: str
    description: str | None
    created_at: datetime
    created_by: str
    expires_at: datetime | None


def new_signing_secret() -> str:
    """``whsec_`` and 32 random bytes in base64, as the standard's libraries expect."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def _record(row: SigningSecret) -> SecretRecord:
    return SecretRecord(row.id, row.workspace_id, row.description, row.created_at, row.created_by, row.expires_at)


def rotate(principal: Principal, *, workspace_id: str, grace_s: int = DEFAULT_GRACE_S,
           description: str | None = None, now: datetime | None = None) -> tuple[SecretRecord, str, list[SecretRecord]]:
    """A new current secret (returned in clear, this once); the ones it replaces keep verifying
    for ``grace_s`` seconds at most (0: they stop now). Returns the new secret's record, the
    secret, and the secrets that still verify besides it."""
    now = now or utcnow()
    secret = new_signing_secret()
    with database.atomic():
        # The workspace's row, written first, orders rotations of one workspace on either database:
        # two at once must not both stay current.
        Workspace.update(id=Workspace.id).where(Workspace.id == workspace_id).execute()
        # The secrets this one replaces verify for grace_s more at most (0: a leaked secret ends now).
        ends = now + timedelta(seconds=grace_s)
        SigningSecret.update(expires_at=ends).where(
            (SigningSecret.workspace == workspace_id)
            & (SigningSecret.expires_at.is_null() | (SigningSecret.expires_at > ends))).execute()
        SigningSecret.delete().where((SigningSecret.workspace == workspace_id)
                                     & (SigningSecret.expires_at <= now)).execute()
        row = SigningSecret.create(workspace=workspace_id, secret_encrypted=encryption.encrypt(secret),
                                   description=description, created_at=now, created_by=principal.user_id)
        kept = list(SigningSecret.in_workspace(workspace_id).where(SigningSecret.expires_at.is_null(False))
                    .order_by(SigningSecret.created_at.desc()))
        if len(kept) > _MAX_KEPT:
            SigningSecret.delete().where(SigningSecret.id.in_([r.id for r in kept[_MAX_KEPT:]])).execute()
            kept = kept[:_MAX_KEPT]
    return _record(row), secret, [_record(r) for r in kept]


def valid_secrets(workspace_id: str, now: datetime | None = None) -> list[SecretRecord]:
    """The workspace's secrets that verify now, the current one first."""
    now = now or utcnow()
    rows = (SigningSecret.in_workspace(workspace_id)
            .where(SigningSecret.expires_at.is_null() | (SigningSecret.expires_at > now))
            .order_by(SigningSecret.expires_at.is_null(False), SigningSecret.created_at.desc()))
    return [_record(r) for r in rows]


def verify(workspace_id: str, body: bytes, headers: dict[str, str], now: datetime | None = None) -> SecretRecord:
    """The secret whose signature ``headers`` carry for ``body``; Unauthenticated, saying why, if
    none does, a header is malformed (see ``signed_headers``) or the timestamp is outside the
    five-minute window."""
    now = now or utcnow()
    rows = list(SigningSecret.in_workspace(workspace_id)
                .where(SigningSecret.expires_at.is_null() | (SigningSecret.expires_at > now)))
    if not rows:
        raise Unauthenticated("This workspace has no webhook signing secret; create one, or authenticate with "
                              "Authorization: Bearer.")
    webhook_id, timestamp, signatures = signed_headers(headers)
    if abs(timestamp - int(now.replace(tzinfo=UTC).timestamp())) > TOLERANCE_S:
        raise Unauthenticated(_OUTSIDE_WINDOW)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unauthenticated("The signed body is not UTF-8 text.") from exc
    signed_at = datetime.fromtimestamp(timestamp, tz=UTC)
    for row in rows:
        try:
            secret = encryption.decrypt(row.secret_encrypted)
        except encryption.KeyMismatch:
            continue  # made under another SECRET_KEY: it cannot have signed for this server
        expected = base64.b64decode(Webhook(secret).sign(webhook_id, signed_at, text).partition(",")[2])
        if any(hmac.compare_digest(expected, signature) for signature in signatures):
            return _record(row)
    raise Unauthenticated("The webhook signature does not verify: no signature in webhook-signature matches "
                          "this body.")


def signed_headers(headers: dict[str, str]) -> tuple[str, int, list[bytes]]:
    """The webhook-id, the timestamp and the v1 signatures of a signed webhook's headers, parsed as
    strictly as the Standard Webhooks reference does; Unauthenticated naming the header and its
    rule otherwise. Entries of another version than v1 are ignored, as the reference does."""
    missing = [name for name in ("webhook-id", "webhook-timestamp", "webhook-signature") if not headers.get(name)]
    if missing:
        raise Unauthenticated(f"A signed webhook needs the headers webhook-id, webhook-timestamp and "
                              f"webhook-signature; missing: {', '.join(missing)}.")
    webhook_id, timestamp, signature = headers["webhook-id"], headers["webhook-timestamp"], headers["webhook-signature"]
    if not _WEBHOOK_ID.fullmatch(webhook_id):
        raise Unauthenticated(f"webhook-id must be 1 to {WEBHOOK_ID_MAX_CHARS} printable ASCII characters "
                              "without spaces.")
    if not _TIMESTAMP.fullmatch(timestamp):
        raise Unauthenticated("webhook-timestamp must be the Unix time in whole seconds, in ASCII digits only "
                              "(no sign, point or space).")
    if len(timestamp) > 20:  # a number that long is far outside the window, and costly to convert
        raise Unauthenticated(_OUTSIDE_WINDOW)
    signatures = []
    for entry in signature.split(" "):
        version, comma, value = entry.partition(",")
        if not comma or not version:
            raise Unauthenticated("webhook-signature must hold 'v1,<base64 signature>' entries separated by one "
                                  "space each.")
        if version == "v1":
            if not value or not _BASE64.fullmatch(value):
                raise Unauthenticated("webhook-signature: a v1 signature must be standard base64, padded with '=' "
                                      "to a multiple of 4 characters and nothing after.")
            signatures.append(base64.b64decode(value, validate=True))
    if not signatures:
        raise Unauthenticated("webhook-signature holds no v1 signature.")
    return webhook_id, int(timestamp), signatures

