"""Sign-in: a user's password, second factor and workspace rule, made through the domain; the
clock's current code of a secret; and the states only time makes (an expired challenge, a
throttle window that has ended)."""
from __future__ import annotations

import time
from datetime import timedelta

from models.identity import mfa, passwords, workspaces
from models.identity.sign_in import THROTTLE_WINDOW
from models.identity.tables import SignInChallenge, SignInThrottle
from models.identity.totp import code_at, step_of
from models.kernel.db import session, utcnow
from tests.support.factories.identity import Actor

PASSWORD = "correct horse battery staple"


def password(actor: Actor, value: str = PASSWORD) -> str:
    with session():
        passwords.set_password(actor.user_id, value)
    return value


def second_factor(actor: Actor) -> tuple[str, list[str]]:
    """A confirmed second factor of the actor's user: its secret and recovery codes. Confirmed with
    the code of the step before now, so that now's code and the next are still to be used."""
    with session():
        secret, _ = mfa.enrol(actor.user_id, actor.email)
        clock = time.time()
        codes = mfa.confirm(actor.user_id, code_at(secret, step_of(clock) - 1), clock=clock)
    return secret, codes


def code(secret: str, steps_on: int = 0) -> str:
    """The code of now's step (or ``steps_on`` after it): the server's window takes one step either side."""
    return code_at(secret, step_of(time.time()) + steps_on)


def require_mfa(actor: Actor, required: bool = True) -> None:
    with session():
        workspaces.update(workspace_id=actor.workspace_id, settings={"requireMfa": required})


def expire_challenges(user_id: str) -> None:
    with session():
        SignInChallenge.update(expires_at=utcnow() - timedelta(seconds=1)).where(
            SignInChallenge.user == user_id).execute()


def end_throttle_window(email: str) -> None:
    with session():
        SignInThrottle.update(window_started_at=utcnow() - THROTTLE_WINDOW).where(
            SignInThrottle.email == email).execute()
