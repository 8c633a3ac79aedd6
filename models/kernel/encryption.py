"""Secrets the service must read back in clear (webhook signing secrets: an HMAC needs the key
itself), encrypted at rest with AES-256-GCM under the operator's key.

The key is ``SECRET_KEY`` (any string; SHA-256 makes it 32 bytes) or, when that is unset, a
random key the first start writes to ``DATA_DIR/secret.key`` (mode 0600). Every process and host
that shares one database must share the key: several hosts on PostgreSQL set ``SECRET_KEY``.
A value encrypted under another key does not decrypt: ``decrypt`` raises ``KeyMismatch``.
"""
from __future__ import annotations

import base64
import hashlib
import os
import secrets
import time
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

_PREFIX = "v1:"
_NONCE_BYTES = 12
_key: AESGCM | None = None


class KeyMismatch(Exception):
    """The value was encrypted under another key (or altered)."""


def configure(secret_key: str | None, data_dir: str | os.PathLike) -> None:
    global _key
    _key = AESGCM(hashlib.sha256((secret_key or _key_file(Path(data_dir))).encode()).digest())


def _key_file(data_dir: Path) -> str:
    path = data_dir / "secret.key"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    data_dir.mkdir(parents=True, exist_ok=True)
    value = secrets.token_urlsafe(32)
    try:
        # O_EXCL: of several workers starting at once, one writes and the others read its key.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_when_written(path)
    with os.fdopen(fd, "w") as file:
        file.write(value + "\n")
    return value


def _read_when_written(path: Path) -> str:
    for _ in range(100):
        value = path.read_text().strip()
        if value:
            return value
        time.sleep(0.01)
    raise RuntimeError(f"{path} is empty: delete it, or set SECRET_KEY")


def _cipher() -> AESGCM:
    if _key is None:
        raise RuntimeError("encryption is not configured (core.boot does it)")
    return _key


def encrypt(plaintext: str) -> str:
    nonce = secrets.token_bytes(_NONCE_BYTES)
    sealed = _cipher().encrypt(nonce, plaintext.encode(), None)
    return _PREFIX + base64.b64encode(nonce + sealed).decode()


def decrypt(token: str) -> str:
    if not token.startswith(_PREFIX):
        raise KeyMismatch("not a value this service encrypted")
    raw = base64.b64decode(token[len(_PREFIX):])
    try:
        return _cipher().decrypt(raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], None).decode()
    except InvalidTag as exc:
        raise KeyMismatch("encrypted under another key") from exc
