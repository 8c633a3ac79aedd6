"""A user's second factor: a TOTP secret (models.identity.totp) and ten recovery codes.

Enrolment makes a secret, stored encrypted (models.kernel.encryption, as webhook signing secrets
are: a code is checked against the secret itself) and shown once with its otpauth:// URI; it acts
only once a first code confirms it, which also gives the ten recovery codes, shown once and stored
as their SHA-256 (80 random bits each), each good once. A code is accepted once: the step it
belongs to is recorded, in the one UPDATE that accepts it, and a code of that step or an earlier one
is refused as a replay. The user turns the factor off with a current code; an administrator of the
workspace resets it (``reset``): the user then enrols anew where a workspace requires it.
"""
from __future__ import annotations

import base64
import secrets
import time
from datetime import datetime

from models.identity.principal import Principal
from models.identity.roles import granted_by, require_within
from models.identity.tables import Membership, MfaRecoveryCode, UserMfa
from models.identity.totp import DIGITS, matching_step, new_secret, provisioning_uri
from models.kernel import encryption
from models.kernel.db import database, utcnow
from models.kernel.errors import Conflict, Forbidden, InvalidInput, NotFound
from models.kernel.secrets import digest

ISSUER = "Voice agent back end"
RECOVERY_CODES = 10
_RECOVERY_BYTES = 10  # 80 bits: 16 base32 characters


def is_active(user_id: str) -> bool:
    return UserMfa.select().where((UserMfa.user == user_id) & UserMfa.confirmed_at.is_null(False)).exists()


def enrol(user_id: str, email: str, *, now: datetime | None = None) -> tuple[str, str]:
    """A new pending secret for the user (replacing a pending one) and its otpauth:// URI, both
    shown this once. Conflict when a confirmed second factor is on: turn it off first."""
    if is_active(user_id):
        raise Conflict("A second factor is on already; turn it off (or have it reset) before enrolling another.")
    secret = new_secret()
    sealed = encryption.encrypt(secret)
    now = now or utcnow()
    with database.atomic():
        # Only a pending row is replaced: one confirmed meanwhile stays.
        (UserMfa.insert(user=user_id, secret=sealed, created_at=now, confirmed_at=None, last_step=None)
         .on_conflict(conflict_target=[UserMfa.user], update={UserMfa.secret: sealed, UserMfa.created_at: now},
                      where=UserMfa.confirmed_at.is_null())
         .execute())
        if is_active(user_id):
            raise Conflict("A second factor was confirmed meanwhile; turn it off before enrolling another.")
    return secret, provisioning_uri(secret, account=email, issuer=ISSUER)


def _code(code: str) -> str:
    if len(code) != DIGITS or not code.isascii() or not code.isdigit():
        raise InvalidInput(f"code must be the {DIGITS} digits the authenticator app shows.")
    return code


def _accept(user_id: str, sealed: str, code: str, clock: float, *, confirming: bool) -> bool:
    """Accepts ``code`` of the secret ``sealed`` once: records its step unless that step, or a later
    one, was accepted already (a replay). ``confirming``: the row must still be pending, and is
    confirmed by the same UPDATE."""
    step = matching_step(encryption.decrypt(sealed), _code(code), clock)
    if step is None:
        return False
    fresh = UserMfa.last_step.is_null() | (UserMfa.last_step < step)
    state = UserMfa.confirmed_at.is_null() if confirming else UserMfa.confirmed_at.is_null(False)
    changes = {UserMfa.last_step: step}
    if confirming:
        changes[UserMfa.confirmed_at] = utcnow()
    return bool(UserMfa.update(changes)
                .where((UserMfa.user == user_id) & (UserMfa.secret == sealed) & state & fresh).execute())


def confirm(user_id: str, code: str, *, clock: float | None = None) -> list[str]:
    """Turns the pending secret on with a current code of it; returns the recovery codes, shown
    this once. InvalidInput for a code that does not match; Conflict when nothing is pending."""
    clock = time.time() if clock is None else clock
    with database.atomic():
        row = UserMfa.get_or_none(UserMfa.user == user_id)
        if row is None or row.confirmed_at is not None:
            raise Conflict("There is no pending second factor to confirm: enrol first."
                           if row is None else "The second factor is on already.")
        if not _accept(user_id, row.secret, code, clock, confirming=True):
            raise InvalidInput("code does not match the secret being enrolled (or was used already); "
                               "send the code the authenticator app shows now.")
        return _new_recovery_codes(user_id)


def _new_recovery_codes(user_id: str) -> list[str]:
    MfaRecoveryCode.delete().where(MfaRecoveryCode.user == user_id).execute()
    codes = []
    for _ in range(RECOVERY_CODES):
        raw = base64.b32encode(secrets.token_bytes(_RECOVERY_BYTES)).decode()
        codes.append("-".join(raw[i:i + 4] for i in range(0, len(raw), 4)))
    MfaRecoveryCode.insert_many([{"user": user_id, "code_hash": digest(_normal(c))} for c in codes]).execute()
    return codes


def _normal(recovery_code: str) -> str:
    """As typed: case, dashes and spaces do not matter."""
    return recovery_code.replace("-", "").replace(" ", "").upper()


def check_code(user_id: str, code: str, *, clock: float | None = None) -> bool:
    """Whether ``code`` is a current code of the user's confirmed second factor, not used before;
    accepting it records its step."""
    sealed = (UserMfa.select(UserMfa.secret)
              .where((UserMfa.user == user_id) & UserMfa.confirmed_at.is_null(False)).scalar())
    if sealed is None:
        return False
    return _accept(user_id, sealed, code, time.time() if clock is None else clock, confirming=False)


def use_recovery_code(user_id: str, recovery_code: str, *, now: datetime | None = None) -> bool:
    """Whether ``recovery_code`` is an unused recovery code of the user; using it spends it."""
    if not is_active(user_id):
        return False
    return bool(MfaRecoveryCode.update(used_at=now or utcnow())
                .where((MfaRecoveryCode.user == user_id) & (MfaRecoveryCode.code_hash == digest(_normal(recovery_code)))
                       & MfaRecoveryCode.used_at.is_null()).execute())


def recovery_codes_left(user_id: str) -> int:
    return (MfaRecoveryCode.select()
            .where((MfaRecoveryCode.user == user_id) & MfaRecoveryCode.used_at.is_null()).count())


def disable(user_id: str, code: str, *, clock: float | None = None) -> None:
    """Turns the user's own second factor off, with a current code of it."""
    with database.atomic():
        if not is_active(user_id):
            raise Conflict("No second factor is on.")
        if not check_code(user_id, code, clock=clock):
            raise InvalidInput("code is not a current code of the second factor (or was used already).")
        reset(user_id)


def reset(user_id: str) -> bool:
    """Removes the user's second factor, pending or on, and its recovery codes; whether there was one."""
    MfaRecoveryCode.delete().where(MfaRecoveryCode.user == user_id).execute()
    return bool(UserMfa.delete().where(UserMfa.user == user_id).execute())


def reset_member(principal: Principal, *, workspace_id: str, user_id: str) -> bool:
    """An administrator's reset of a member's second factor (members:mfa-reset); whether there was one.

    A second factor guards the person's account in every workspace they belong to, so the caller
    must be able to reset it in each of them: hold members:mfa-reset there, and every permission the
    member's role there grants (an admin does not reset an owner's: the owner holds more). Otherwise
    403, naming the rule; the member turns it off themselves. Not a member of this workspace: 404."""
    with database.atomic():
        rows = list(Membership.select(Membership.workspace, Membership.user, Membership.role)
                    .where(Membership.user.in_([user_id, principal.user_id])).tuples())
        theirs = {w: role for w, u, role in rows if u == user_id}
        mine = {w: role for w, u, role in rows if u == principal.user_id}
        if workspace_id not in theirs:
            raise NotFound(f"User {user_id} is not a member of this workspace.")
        require_within(principal, granted_by(workspace_id, theirs[workspace_id]),
                       "Resetting the second factor of this member")
        for other, role in theirs.items():
            if other == workspace_id:
                continue
            held = granted_by(other, mine[other]) if other in mine else frozenset()
            if "members:mfa-reset" not in held or not granted_by(other, role) <= held:
                raise Forbidden("This member also belongs to a workspace where the caller may not reset their "
                                "second factor; only they may turn it off.")
        return reset(user_id)
