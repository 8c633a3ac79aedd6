"""TOTP (RFC 6238): the RFC's test vectors, the window of one step either side at its edges and just
past them, a code accepted once (replay refused) and recovery codes good once, with the clock fixed."""
from __future__ import annotations

import base64

import pytest

from models.identity import mfa
from models.identity.accounts import bootstrap_workspace
from models.identity.tables import MfaRecoveryCode, UserMfa
from models.identity.totp import STEP_S, code_at, matching_step, provisioning_uri, step_of
from models.kernel import encryption

# RFC 6238 appendix B: the SHA-1 secret is the ASCII "12345678901234567890"; its 8-digit codes end
# in the 6 digits we use.
RFC_SECRET = base64.b32encode(b"12345678901234567890").decode()
RFC_VECTORS = {59: "94287082", 1111111109: "07081804", 1111111111: "14050471", 1234567890: "89005924",
               2000000000: "69279037", 20000000000: "65353130"}
T0 = 1_800_000_000.0  # a step boundary: T0 % 30 == 0


@pytest.mark.parametrize("at", sorted(RFC_VECTORS))
def test_the_codes_are_the_rfcs(at):
    assert code_at(RFC_SECRET, step_of(at)) == RFC_VECTORS[at][-6:]


def test_one_step_either_side_is_accepted_two_are_not():
    assert T0 % STEP_S == 0
    now = T0 + 10
    current = step_of(now)
    for offset in (-1, 0, 1):
        assert matching_step(RFC_SECRET, code_at(RFC_SECRET, current + offset), now) == current + offset
    for offset in (-2, 2):
        assert matching_step(RFC_SECRET, code_at(RFC_SECRET, current + offset), now) is None


def test_the_window_moves_at_the_step_boundary():
    code = code_at(RFC_SECRET, step_of(T0))  # the code of the step that starts at T0
    assert matching_step(RFC_SECRET, code, T0 - 1) == step_of(T0)  # still the step before: +1
    assert matching_step(RFC_SECRET, code, T0 + STEP_S + STEP_S - 1) == step_of(T0)  # 1 step on: -1
    assert matching_step(RFC_SECRET, code, T0 + 2 * STEP_S) is None  # 2 steps on
    assert matching_step(RFC_SECRET, code, T0 - STEP_S - 1) is None  # 2 steps before


def test_the_provisioning_uri_names_the_account_and_the_parameters():
    uri = provisioning_uri("JBSWY3DPEHPK3PXP", account="ada@example.com", issuer="Voice agent back end")
    assert uri.startswith("otpauth://totp/Voice%20agent%20back%20end:ada@example.com?")
    assert "secret=JBSWY3DPEHPK3PXP" in uri and "digits=6" in uri and "period=30" in uri and "algorithm=SHA1" in uri


@pytest.fixture
def user(db, tmp_path):
    encryption.configure(None, tmp_path)
    _, user = bootstrap_workspace(workspace_name="acme", email="ada@example.com")
    return user.id


def _enrolled(user_id: str, clock: float) -> tuple[str, list[str]]:
    secret, _ = mfa.enrol(user_id, "ada@example.com")
    codes = mfa.confirm(user_id, code_at(secret, step_of(clock)), clock=clock)
    return secret, codes


def test_a_code_is_accepted_once_and_no_earlier_step_after_it(user):
    secret, _ = _enrolled(user, T0)  # the confirmation used T0's step
    assert not mfa.check_code(user, code_at(secret, step_of(T0)), clock=T0 + 1)  # replay of the confirming code
    assert mfa.check_code(user, code_at(secret, step_of(T0) + 1), clock=T0 + STEP_S)
    assert not mfa.check_code(user, code_at(secret, step_of(T0) + 1), clock=T0 + STEP_S + 1)  # replay
    # The step before, still in the window, is older than the one accepted: refused too.
    assert not mfa.check_code(user, code_at(secret, step_of(T0)), clock=T0 + STEP_S + 2)
    assert mfa.check_code(user, code_at(secret, step_of(T0) + 2), clock=T0 + 2 * STEP_S)


def test_the_secret_is_stored_encrypted(user):
    secret, _ = _enrolled(user, T0)
    stored = UserMfa.get(UserMfa.user == user).secret
    assert secret not in stored and stored.startswith("v1:") and encryption.decrypt(stored) == secret


def test_recovery_codes_are_ten_stored_hashed_and_good_once(user):
    _, codes = _enrolled(user, T0)
    assert len(codes) == len(set(codes)) == 10
    stored = [h for (h,) in MfaRecoveryCode.select(MfaRecoveryCode.code_hash).tuples()]
    assert not any(code.replace("-", "") in h or code in h for code in codes for h in stored)
    assert mfa.use_recovery_code(user, codes[0].lower())  # case and dashes do not matter
    assert not mfa.use_recovery_code(user, codes[0])
    assert mfa.recovery_codes_left(user) == 9
    assert not mfa.use_recovery_code(user, "AAAA-BBBB-CCCC-DDDD")


def test_a_code_of_a_pending_secret_does_not_sign_in(user):
    secret, _ = mfa.enrol(user, "ada@example.com")
    assert not mfa.check_code(user, code_at(secret, step_of(T0)), clock=T0)
    assert not mfa.is_active(user)
