"""Passwords: the rule they meet, their argon2id hashes, and checking one.

A hash takes tens of milliseconds and 46 MiB by design (argon2-cffi's PasswordHasher, argon2id with
one of OWASP's recommended settings: one pass over 46 MiB, one lane; about 30-60 ms on this project's
2-core machines, where RFC 9106's 64 MiB, 3 passes, 4 lanes took 120-170 ms): a stolen table costs
as much per guess.
The hash carries its parameters, so a hash made under older ones is redone, with the password in
hand, when it next matches (``verify`` returns the new hash to store). An email with no password
(unknown, or a user who has none) is checked against ``DUMMY_HASH`` all the same: a sign-in takes as
long whether or not the account exists.
"""
from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from models.identity.tables import User, UserPassword
from models.kernel.db import utcnow
from models.kernel.errors import InvalidInput, NotFound

MIN_CHARS = 12
MAX_CHARS = 256

_hasher = PasswordHasher(time_cost=1, memory_cost=46 * 1024, parallelism=1)
# A hash of a password nobody types (it breaks the length rule), made under the current parameters.
DUMMY_HASH = _hasher.hash("not a password")


def require_valid(password: str, field: str = "password") -> str:
    """The password if it meets the rule; InvalidInput naming ``field`` otherwise. Never repeats it."""
    if not MIN_CHARS <= len(password) <= MAX_CHARS:
        raise InvalidInput(f"{field} must be {MIN_CHARS} to {MAX_CHARS} characters; {len(password)} given.")
    if "\x00" in password:
        raise InvalidInput(f"{field} must not contain NUL.")
    return password


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify(stored_hash: str | None, password: str) -> tuple[bool, str | None]:
    """Whether ``password`` matches ``stored_hash`` (None: no password, checked against the dummy
    hash so that it takes as long), and the hash to store instead when the parameters changed."""
    try:
        _hasher.verify(stored_hash or DUMMY_HASH, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False, None
    if stored_hash is None:
        return False, None
    return True, (_hasher.hash(password) if _hasher.check_needs_rehash(stored_hash) else None)


def stored_hash(user_id: str) -> str | None:
    return UserPassword.select(UserPassword.password_hash).where(UserPassword.user == user_id).scalar()


def has_password(user_id: str) -> bool:
    return stored_hash(user_id) is not None


def set_password(user_id: str, password: str) -> None:
    """Sets (or replaces) the user's password, once it meets the rule."""
    hashed = hash_password(require_valid(password))
    now = utcnow()
    (UserPassword.insert(user=user_id, password_hash=hashed, updated_at=now)
     .on_conflict(conflict_target=[UserPassword.user],
                  update={UserPassword.password_hash: hashed, UserPassword.updated_at: now})
     .execute())


def set_password_by_email(email: str, password: str) -> str:
    """``set_password`` for the user of ``email`` (scripts/admin); returns the user's id."""
    user_id = User.select(User.id).where(User.email == email.strip().lower()).scalar()
    if user_id is None:
        raise NotFound(f"No user with email {email}.")
    set_password(user_id, password)
    return user_id


def rehash(user_id: str, old_hash: str, new_hash: str) -> None:
    """Stores ``new_hash`` unless the password changed meanwhile."""
    (UserPassword.update(password_hash=new_hash, updated_at=utcnow())
     .where((UserPassword.user == user_id) & (UserPassword.password_hash == old_hash)).execute())
