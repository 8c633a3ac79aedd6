"""Signing in over HTTP: an email and a password give an access token; a second factor's code, or
a recovery code, completes a sign-in that needs one; a workspace's requireMfa makes a user without
one enrol first. An unknown email answers as a wrong password does; ten failed tries in the window
lock the email (429, Retry-After) and the eleventh is refused whatever the password; a challenge is
good once and expires; the password is in no answer, log line or audit entry."""
from __future__ import annotations

import logging

from argon2 import PasswordHasher

from models.identity.tables import AccessToken, User, UserPassword
from models.kernel.db import session, utcnow
from tests.support.client import Api
from tests.support.factories import sign_in as signing
from tests.support.factories.sign_in import PASSWORD
from tests.support.threads import run_threads

API = "/api/v2"


def sign_in(platform, email, password=PASSWORD, expect=200):
    response = platform.client.post(API + "/auth/sign-in", json={"email": email, "password": password})
    assert response.status_code == expect, response.text
    return response


def result(response) -> dict:
    return response.json()["data"]["result"]


def error(response) -> tuple[int, str, str]:
    data = response.json()["data"]
    return response.status_code, data["code"], data["message"]


def test_a_password_gives_an_access_token_that_acts_and_is_logged_without_the_password(platform, caplog):
    caplog.set_level(logging.DEBUG)
    owner = platform.workspace()
    signing.password(owner)
    with session():
        stored = UserPassword.get(UserPassword.user == owner.user_id).password_hash
    assert stored.startswith("$argon2id$") and PASSWORD not in stored
    response = sign_in(platform, owner.email.upper())  # the email's case does not matter
    assert PASSWORD not in response.text
    signed_in = result(response)
    assert signed_in["mfaRequired"] is False and signed_in["mfaEnrolmentRequired"] is False
    assert signed_in["user"] == {"id": owner.user_id, "email": owner.email}
    token = signed_in["accessToken"]["token"]
    assert token.startswith("vat_")
    listed = result(platform.client.get(API + "/access-tokens", headers=owner.with_secret(token).headers))["accessTokens"]
    assert any(t["id"] == signed_in["accessToken"]["id"] and t["current"] and t["name"] == "sign-in" for t in listed)
    logs = Api(platform, owner)("GET", "/workspace/logs", operationId="signIn")["logs"]
    assert len(logs) == 1 and logs[0]["changes"] == {"fields": ["email", "password"]}
    assert logs[0]["actor"] == {"userId": owner.user_id, "credentialId": signed_in["accessToken"]["id"],
                                "kind": "sign_in"}
    assert PASSWORD not in caplog.text


def test_an_unknown_email_a_user_without_password_and_a_wrong_password_answer_alike(platform):
    owner = platform.workspace()
    signing.password(owner)
    without = platform.workspace("no password")
    deactivated = platform.workspace("deactivated")
    signing.password(deactivated)
    with session():
        User.update(is_active=False).where(User.id == deactivated.user_id).execute()
    wrong = error(sign_in(platform, owner.email, "not the password at all", expect=401))
    unknown = error(sign_in(platform, "nobody-here@example.com", expect=401))
    no_password = error(sign_in(platform, without.email, expect=401))
    inactive = error(sign_in(platform, deactivated.email, expect=401))  # even with the right password
    assert wrong == unknown == no_password == inactive == (401, "unauthenticated",
                                                           "The email or the password is not right.")


def test_a_hash_made_under_other_parameters_is_redone_at_the_next_right_sign_in(platform):
    owner = platform.workspace()
    old = PasswordHasher(time_cost=2, memory_cost=8 * 1024, parallelism=2).hash(PASSWORD)
    with session():
        UserPassword.create(user=owner.user_id, password_hash=old, updated_at=utcnow())
    sign_in(platform, owner.email, "not the password at all", expect=401)
    with session():
        assert UserPassword.get(UserPassword.user == owner.user_id).password_hash == old  # a wrong one changes nothing
    sign_in(platform, owner.email)
    with session():
        new = UserPassword.get(UserPassword.user == owner.user_id).password_hash
    assert new != old and new.startswith("$argon2id$v=19$m=47104,t=1,p=1$")
    sign_in(platform, owner.email)  # and it still matches


def test_the_password_is_checked_within_its_bounds(platform):
    owner = platform.workspace()
    signing.password(owner)
    assert "password" in error(sign_in(platform, owner.email, "x" * 257, expect=400))[2]
    assert error(sign_in(platform, owner.email, "x" * 256, expect=401))[0] == 401
    assert "password" in error(sign_in(platform, owner.email, "with\x00nul in it", expect=400))[2]
    assert "password" in error(sign_in(platform, owner.email, "", expect=400))[2]
    assert "email" in error(sign_in(platform, "not an email", expect=400))[2]


def test_ten_failures_lock_the_email_for_the_window_whatever_the_password(platform):
    owner = platform.workspace()
    signing.password(owner)
    for _ in range(10):
        sign_in(platform, owner.email, "a wrong password!", expect=401)
    locked = sign_in(platform, owner.email, expect=429)  # the right password, past the limit
    assert locked.json()["data"]["code"] == "rate_limited"
    assert 0 < int(locked.headers["Retry-After"]) <= 15 * 60
    assert "token" not in locked.text
    # Another email is not locked, a known one or not.
    other = platform.workspace("other")
    signing.password(other)
    sign_in(platform, other.email)
    # An unknown email is counted the same way.
    for _ in range(10):
        sign_in(platform, "nobody-here@example.com", "a wrong password!", expect=401)
    assert error(sign_in(platform, "nobody-here@example.com", expect=429))[1] == "rate_limited"
    # Once the window has ended, the right password signs in.
    signing.end_throttle_window(owner.email)
    assert result(sign_in(platform, owner.email))["accessToken"]["token"].startswith("vat_")


def test_nine_failures_then_the_right_password_signs_in_and_clears_the_count(platform):
    owner = platform.workspace()
    signing.password(owner)
    for _ in range(9):
        sign_in(platform, owner.email, "a wrong password!", expect=401)
    sign_in(platform, owner.email)  # the tenth try, within the limit
    for _ in range(9):  # cleared: nine more failures and the right password still sign in
        sign_in(platform, owner.email, "a wrong password!", expect=401)
    sign_in(platform, owner.email)


def test_a_second_factor_completes_the_sign_in_once_with_a_code_or_a_recovery_code(platform):
    owner = platform.workspace()
    signing.password(owner)
    secret, recovery = signing.second_factor(owner)
    first = result(sign_in(platform, owner.email))
    assert first["mfaRequired"] is True and first["mfaEnrolmentRequired"] is False and "accessToken" not in first
    challenge = first["challenge"]
    assert challenge.startswith("vsc_")
    # The challenge is no credential.
    assert platform.client.get(API + "/access-tokens",
                               headers={"Authorization": f"Bearer {challenge}"}).status_code == 401
    wrong = platform.client.post(API + "/auth/sign-in/mfa", json={"challenge": challenge, "code": "000000"
                                 if signing.code(secret) != "000000" else "111111"})
    assert error(wrong) == (401, "unauthenticated", "The code is not right, or was used already.")
    code = signing.code(secret)
    done = platform.client.post(API + "/auth/sign-in/mfa", json={"challenge": challenge, "code": code})
    assert done.status_code == 200, done.text
    assert result(done)["user"]["id"] == owner.user_id and result(done)["accessToken"]["token"].startswith("vat_")
    # The challenge is used up, and the code too: a new challenge with the same code is a replay.
    again = platform.client.post(API + "/auth/sign-in/mfa", json={"challenge": challenge, "code": code})
    assert error(again)[:2] == (401, "unauthenticated") and "challenge" in error(again)[2]
    second = result(sign_in(platform, owner.email))["challenge"]
    replay = platform.client.post(API + "/auth/sign-in/mfa", json={"challenge": second, "code": code})
    assert error(replay) == (401, "unauthenticated", "The code is not right, or was used already.")
    # A recovery code completes it, once.
    by_recovery = platform.client.post(API + "/auth/sign-in/mfa", json={"challenge": second, "recoveryCode": recovery[0]})
    assert by_recovery.status_code == 200, by_recovery.text
    third = result(sign_in(platform, owner.email))["challenge"]
    spent = platform.client.post(API + "/auth/sign-in/mfa", json={"challenge": third, "recoveryCode": recovery[0]})
    assert error(spent)[0] == 401
    both = platform.client.post(API + "/auth/sign-in/mfa", json={"challenge": third, "code": code,
                                                                 "recoveryCode": recovery[1]})
    assert error(both)[0] == 400


def test_a_challenge_expires(platform):
    owner = platform.workspace()
    signing.password(owner)
    secret, _ = signing.second_factor(owner)
    challenge = result(sign_in(platform, owner.email))["challenge"]
    signing.expire_challenges(owner.user_id)
    expired = platform.client.post(API + "/auth/sign-in/mfa", json={"challenge": challenge, "code": signing.code(secret)})
    assert error(expired) == (401, "unauthenticated",
                              "The challenge is not valid: it is unknown, used already or expired; sign in again.")
    unknown = platform.client.post(API + "/auth/sign-in/mfa", json={"challenge": "vsc_unknown", "code": "123456"})
    assert error(unknown) == error(expired)


def test_codes_count_against_the_email_as_passwords_do(platform):
    owner = platform.workspace()
    signing.password(owner)
    secret, _ = signing.second_factor(owner)
    challenge = result(sign_in(platform, owner.email))["challenge"]  # one try, not a failure to clear yet
    wrong = "000000" if signing.code(secret) not in ("000000",) else "111111"
    for _ in range(9):
        platform.client.post(API + "/auth/sign-in/mfa", json={"challenge": challenge, "code": wrong})
    locked = platform.client.post(API + "/auth/sign-in/mfa", json={"challenge": challenge, "code": signing.code(secret)})
    assert locked.status_code == 429 and "Retry-After" in locked.headers


def test_a_workspace_that_requires_a_second_factor_makes_a_user_without_one_enrol(platform):
    owner = platform.workspace()
    signing.password(owner)
    signing.require_mfa(owner)
    assert Api(platform, owner)("GET", "/workspace")["workspace"]["settings"]["requireMfa"] is True
    first = result(sign_in(platform, owner.email))
    assert first["mfaEnrolmentRequired"] is True and first["mfaRequired"] is False and "accessToken" not in first
    challenge = first["challenge"]
    # The enrolment challenge does nothing else: not a code's challenge, not a bearer credential.
    wrong_step = platform.client.post(API + "/auth/sign-in/mfa", json={"challenge": challenge, "code": "123456"})
    assert error(wrong_step)[0] == 401
    assert platform.client.get(API + "/access-tokens",
                               headers={"Authorization": f"Bearer {challenge}"}).status_code == 401
    enrolled = platform.client.post(API + "/auth/sign-in/mfa-enrol", json={"challenge": challenge})
    assert enrolled.status_code == 200, enrolled.text
    secret = result(enrolled)["secret"]
    assert result(enrolled)["provisioningUri"].startswith("otpauth://totp/")
    confirmed = platform.client.post(API + "/auth/sign-in/mfa-confirm",
                                     json={"challenge": challenge, "code": signing.code(secret)})
    assert confirmed.status_code == 200, confirmed.text
    done = result(confirmed)
    assert len(done["recoveryCodes"]) == 10 and done["accessToken"]["token"].startswith("vat_")
    again = platform.client.post(API + "/auth/sign-in/mfa-confirm",
                                 json={"challenge": challenge, "code": signing.code(secret, 1)})
    assert error(again)[0] == 401
    # From now on, the code's step.
    assert result(sign_in(platform, owner.email))["mfaRequired"] is True
    logs = Api(platform, owner)("GET", "/workspace/logs", operationId="confirmMfaToSignIn")["logs"]
    assert logs[0]["changes"] == {"fields": ["challenge", "code"]} and secret not in str(logs)


def test_an_invitation_sets_the_new_users_password_within_its_bounds(platform):
    owner = platform.workspace()
    api = Api(platform, owner)

    def invite(email):
        return api("POST", "/invitations", json={"email": email, "role": "member"})["token"]

    def accept(token, password):
        return platform.client.post(API + "/invitations/accept", json={"token": token, "password": password})

    token = invite("grace@example.com")
    assert "password" in error(accept(token, "x" * 11))[2]
    assert "password" in error(accept(token, "x" * 257))[2]
    accepted = accept(token, "y" * 12)
    assert accepted.status_code == 200, accepted.text and "y" * 12 not in accepted.text
    assert result(sign_in(platform, "grace@example.com", "y" * 12))["user"]["email"] == "grace@example.com"
    longest = accept(invite("linus@example.com"), "z" * 256)
    assert longest.status_code == 200
    sign_in(platform, "linus@example.com", "z" * 256)
    # An existing account's password is not set through an invitation: 409, and nothing accepted.
    elsewhere = platform.workspace("elsewhere")
    token = invite(elsewhere.email)
    refused = accept(token, "a new password")
    assert error(refused)[:2] == (409, "conflict") and "password" in error(refused)[2]
    assert api("GET", "/invitations", status="pending")["invitations"][0]["email"] == elsewhere.email
    assert platform.client.post(API + "/invitations/accept", json={"token": token}).status_code == 200
    log = str(api("GET", "/workspace/logs", operationId="acceptInvitation")["logs"])
    assert "y" * 12 not in log and "z" * 256 not in log


def test_concurrent_tries_never_overrun_the_limit(platform):
    owner = platform.workspace()
    signing.password(owner)
    statuses = run_threads(20, lambda i: platform.client.post(
        API + "/auth/sign-in", json={"email": owner.email, "password": "a wrong password!"}).status_code)
    assert sorted(statuses) == [401] * 10 + [429] * 10, statuses


def test_a_challenge_completes_one_sign_in_of_many_at_once(platform):
    owner = platform.workspace()
    signing.password(owner)
    secret, _ = signing.second_factor(owner)
    challenge = result(sign_in(platform, owner.email))["challenge"]
    code = signing.code(secret)
    answers = run_threads(8, lambda i: platform.client.post(API + "/auth/sign-in/mfa",
                                                            json={"challenge": challenge, "code": code}))
    assert sorted(a.status_code for a in answers) == [200] + [401] * 7
    with session():
        assert AccessToken.select().where((AccessToken.user == owner.user_id) & (AccessToken.name == "sign-in")).count() == 1
