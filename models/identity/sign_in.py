"""Signing in with an email and a password, then a second factor where there is one.

``sign_in`` answers one of three ways: an access token (the kind models.identity.access_tokens
lists, valid ``TOKEN_VALID_FOR``); or, when the user has a second factor, a challenge for
``complete_with_code``; or, when a workspace of the user requires a second factor
(``requireMfa``) and the user has none, a challenge that can only enrol one
(``enrol_with_challenge``) and confirm it (``confirm_with_challenge``), which completes the
sign-in. A challenge is a secret shown once, stored as its SHA-256, good for minutes and used once:
the one UPDATE that marks it used decides, even between processes.

An unknown email, a user without a password, a deactivated user and a wrong password get the same
answer (401, the same code and message) after the same work: a password is always checked, against
a dummy hash when there is none (models.identity.passwords).

Throttling: each request counts against its client address's limit (models.identity.access,
before this runs), and each try at a password or a code against its email's: at most
``MAX_FAILURES`` in a window of ``THROTTLE_WINDOW`` from the first, after which the email's tries are
refused (429 with Retry-After) until the window ends, whatever the password. The try is counted
before it is checked, by one conditional upsert, so that concurrent tries in several processes
cannot overrun the limit; a completed sign-in clears the count. The count commits on its own, so the
operations that call these run outside the request's unit of work (``x-audit-transaction: own``).
"""
from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import NamedTuple

from peewee import DateTimeField

from models.identity import mfa, passwords
from models.identity.principal import Principal
from models.identity.tables import AccessToken, Membership, SignInChallenge, SignInThrottle, User, UserPassword
from models.identity.workspaces import require_user_credential
from models.kernel.db import database, utcnow
from models.kernel.errors import InvalidInput, RateLimited, Unauthenticated
from models.kernel.scoping import Workspace
from models.kernel.secrets import ACCESS_TOKEN_PREFIX, digest, matches, new_secret

TOKEN_VALID_FOR = timedelta(days=30)
MAX_FAILURES = 10
THROTTLE_WINDOW = timedelta(minutes=15)
CHALLENGE_PREFIX = "vsc_"
CHALLENGE_VALID_FOR = {"mfa": timedelta(minutes=5), "enrol": timedelta(minutes=15)}
EMAIL_MAX_CHARS = 254

INVALID_CREDENTIALS = "The email or the password is not right."
INVALID_CHALLENGE = "The challenge is not valid: it is unknown, used already or expired; sign in again."
INVALID_CODE = "The code is not right, or was used already."


class SignedIn(NamedTuple):
    user_id: str
    email: str
    token_id: str
    token: str
    expires_at: datetime


class Challenge(NamedTuple):
    purpose: str  # "mfa" or "enrol"
    token: str
    expires_at: datetime


_TIMESTAMP = DateTimeField()


def _email(email: str) -> str:
    email = email.strip().lower()
    if not 3 <= len(email) <= EMAIL_MAX_CHARS or "@" not in email[1:-1]:
        raise InvalidInput("email must be an email address.")
    return email


# --- the per-email throttle ----------------------------------------------------------------------

def _count_try(email: str, now: datetime) -> None:
    """Counts one try of ``email``, unless its window holds MAX_FAILURES already: then RateLimited
    with the seconds left in the window."""
    p = database.param
    stale = _TIMESTAMP.db_value(now - THROTTLE_WINDOW)
    row = database.execute_sql(
        f"INSERT INTO sign_in_throttle (email, failures, window_started_at) VALUES ({p}, 1, {p}) "
        f"ON CONFLICT (email) DO UPDATE SET "
        f"failures = CASE WHEN sign_in_throttle.window_started_at <= {p} THEN 1 "
        f"ELSE sign_in_throttle.failures + 1 END, "
        f"window_started_at = CASE WHEN sign_in_throttle.window_started_at <= {p} "
        f"THEN excluded.window_started_at ELSE sign_in_throttle.window_started_at END "
        f"WHERE sign_in_throttle.window_started_at <= {p} OR sign_in_throttle.failures < {p} "
        f"RETURNING failures",
        (email, _TIMESTAMP.db_value(now), stale, stale, stale, MAX_FAILURES)).fetchone()
    if row is not None:
        return
    started = SignInThrottle.select(SignInThrottle.window_started_at).where(SignInThrottle.email == email).scalar()
    retry_after = max(1, math.ceil(((started or now) + THROTTLE_WINDOW - now).total_seconds()))
    raise RateLimited(f"Too many failed sign-in attempts for this account: at most {MAX_FAILURES} in "
                      f"{int(THROTTLE_WINDOW.total_seconds() // 60)} minutes; retry in {retry_after} s.",
                      headers={"Retry-After": str(retry_after)})


def _clear_tries(email: str) -> None:
    SignInThrottle.delete().where(SignInThrottle.email == email).execute()


def forget_past_tries(*, now: datetime | None = None) -> int:
    """Deletes the counts whose window has ended (the retention worker's daily round): they hold
    nothing a new try would not start again. Returns how many."""
    stale = (now or utcnow()) - THROTTLE_WINDOW
    return SignInThrottle.delete().where(SignInThrottle.window_started_at <= stale).execute()


# --- challenges ----------------------------------------------------------------------------------

def _challenge(user_id: str, purpose: str, now: datetime) -> Challenge:
    token = new_secret(CHALLENGE_PREFIX)
    expires_at = now + CHALLENGE_VALID_FOR[purpose]
    SignInChallenge.create(user=user_id, purpose=purpose, token_hash=digest(token), created_at=now,
                           expires_at=expires_at)
    return Challenge(purpose, token, expires_at)


def _open_challenge(token: str, purpose: str, now: datetime) -> tuple[str, str, str]:
    """(challenge id, user id, email) of an unused, unexpired challenge of ``purpose``;
    Unauthenticated otherwise, the same for each reason."""
    row = None
    if token.startswith(CHALLENGE_PREFIX):
        row = (SignInChallenge.select(SignInChallenge.id, SignInChallenge.token_hash, SignInChallenge.purpose,
                                      SignInChallenge.expires_at, SignInChallenge.used_at, User.id, User.email,
                                      User.is_active)
               .join(User, on=(User.id == SignInChallenge.user))
               .where(SignInChallenge.token_hash == digest(token)).tuples().first())
    if row is None:
        raise Unauthenticated(INVALID_CHALLENGE)
    challenge_id, token_hash, kind, expires_at, used_at, user_id, email, active = row
    if not matches(token, token_hash) or kind != purpose or used_at is not None or expires_at <= now or not active:
        raise Unauthenticated(INVALID_CHALLENGE)
    return challenge_id, user_id, email


def _use_challenge(challenge_id: str, now: datetime) -> None:
    """Marks the challenge used, if no other request did first."""
    if not SignInChallenge.update(used_at=now).where(
            (SignInChallenge.id == challenge_id) & SignInChallenge.used_at.is_null()
            & (SignInChallenge.expires_at > now)).execute():
        raise Unauthenticated(INVALID_CHALLENGE)


def forget_past_challenges(*, now: datetime | None = None) -> int:
    return SignInChallenge.delete().where(SignInChallenge.expires_at <= (now or utcnow())).execute()


# --- the steps -----------------------------------------------------------------------------------

def _token(user_id: str, email: str, now: datetime) -> SignedIn:
    secret = new_secret(ACCESS_TOKEN_PREFIX)
    row = AccessToken.create(user=user_id, token_hash=digest(secret), name="sign-in", created_at=now,
                             expires_at=now + TOKEN_VALID_FOR)
    return SignedIn(user_id, email, row.id, secret, row.expires_at)


def requires_mfa(user_id: str) -> bool:
    """Whether a workspace of the user requires a second factor (its ``requireMfa`` setting)."""
    settings = (Workspace.select(Workspace.settings).join(Membership, on=(Membership.workspace == Workspace.id))
                .where(Membership.user == user_id).tuples())
    return any((s or {}).get("requireMfa") is True for (s,) in settings)


def sign_in(email: str, password: str, *, now: datetime | None = None) -> SignedIn | Challenge:
    """An access token for a right email and password, or the challenge of the step that remains."""
    now = now or utcnow()
    email = _email(email)
    if len(password) > passwords.MAX_CHARS:
        raise InvalidInput(f"password must be at most {passwords.MAX_CHARS} characters.")
    _count_try(email, now)
    row = (User.select(User.id, User.is_active, UserPassword.password_hash)
           .join(UserPassword, on=(UserPassword.user == User.id)).where(User.email == email).tuples().first())
    stored = row[2] if row else None
    right, new_hash = passwords.verify(stored, password)
    if not right or not row[1]:
        raise Unauthenticated(INVALID_CREDENTIALS)
    user_id = row[0]
    if new_hash is not None:
        passwords.rehash(user_id, stored, new_hash)
    if mfa.is_active(user_id):
        return _challenge(user_id, "mfa", now)
    if requires_mfa(user_id):
        return _challenge(user_id, "enrol", now)
    _clear_tries(email)
    return _token(user_id, email, now)


def complete_with_code(challenge: str, *, code: str | None = None, recovery_code: str | None = None,
                       now: datetime | None = None, clock: float | None = None) -> SignedIn:
    """The access token of a sign-in whose second step is a code of the user's second factor, or one
    of their recovery codes (which it spends)."""
    if (code is None) == (recovery_code is None):
        raise InvalidInput("Give code or recoveryCode: one of them, not both.")
    now = now or utcnow()
    challenge_id, user_id, email = _open_challenge(challenge, "mfa", now)
    _count_try(email, now)
    with database.atomic():  # the challenge and the code are spent together, or neither
        _use_challenge(challenge_id, now)
        right = (mfa.check_code(user_id, code, clock=clock) if code is not None
                 else mfa.use_recovery_code(user_id, recovery_code, now=now))
        if not right:
            raise Unauthenticated(INVALID_CODE)
        signed_in = _token(user_id, email, now)
    _clear_tries(email)
    return signed_in


def enrol_with_challenge(challenge: str, *, now: datetime | None = None) -> tuple[str, str, str, str]:
    """The user of an enrolment challenge (which stays open for the confirmation): their id and
    email, and their second factor's secret and URI."""
    now = now or utcnow()
    _, user_id, email = _open_challenge(challenge, "enrol", now)
    return (user_id, email, *mfa.enrol(user_id, email, now=now))


def confirm_with_challenge(challenge: str, code: str, *, now: datetime | None = None,
                           clock: float | None = None) -> tuple[SignedIn, list[str]]:
    """Confirms the second factor enrolled with the challenge, which completes the sign-in: the
    access token and the recovery codes."""
    now = now or utcnow()
    challenge_id, user_id, email = _open_challenge(challenge, "enrol", now)
    _count_try(email, now)
    with database.atomic():
        _use_challenge(challenge_id, now)
        try:
            codes = mfa.confirm(user_id, code, clock=clock)
        except InvalidInput as exc:
            raise Unauthenticated(INVALID_CODE) from exc
        signed_in = _token(user_id, email, now)
    _clear_tries(email)
    return signed_in, codes


def enrol_own(principal: Principal) -> tuple[str, str]:
    """``mfa.enrol`` of the caller, who must use their access token (an API key acts for a
    workspace, not for a person's account)."""
    require_user_credential(principal, "Enrolling a second factor")
    email = User.select(User.email).where(User.id == principal.user_id).scalar()
    return mfa.enrol(principal.user_id, email)


def confirm_own(principal: Principal, code: str, *, clock: float | None = None) -> list[str]:
    """``mfa.confirm`` of the caller's pending second factor; the try counts against the user's
    email as a sign-in's does, so that a stolen token gives no more guesses at a code."""
    require_user_credential(principal, "Confirming a second factor")
    email = _count_try_of(principal.user_id)
    codes = mfa.confirm(principal.user_id, code, clock=clock)
    _clear_tries(email)
    return codes


def disable_own(principal: Principal, code: str, *, clock: float | None = None) -> None:
    """``mfa.disable`` of the caller's second factor, counted as ``confirm_own`` is."""
    require_user_credential(principal, "Turning off a second factor")
    email = _count_try_of(principal.user_id)
    mfa.disable(principal.user_id, code, clock=clock)
    _clear_tries(email)


def _count_try_of(user_id: str) -> str:
    email = User.select(User.email).where(User.id == user_id).scalar()
    _count_try(email, utcnow())
    return email
