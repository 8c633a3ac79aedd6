"""Signing in: signIn, completeSignIn, enrolMfaToSignIn, confirmMfaToSignIn. None takes a
credential: the password, then the challenge, is one."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import iso
from models.identity import sign_in as signing_in
from models.identity.sign_in import Challenge, SignedIn


def signed_in_shape(signed_in: SignedIn) -> dict:
    return {"mfaRequired": False, "mfaEnrolmentRequired": False,
            "user": {"id": signed_in.user_id, "email": signed_in.email},
            "accessToken": {"id": signed_in.token_id, "token": signed_in.token, "expiresAt": iso(signed_in.expires_at)}}


def challenge_shape(challenge: Challenge) -> dict:
    return {"mfaRequired": challenge.purpose == "mfa", "mfaEnrolmentRequired": challenge.purpose == "enrol",
            "challenge": challenge.token, "challengeExpiresAt": iso(challenge.expires_at)}


def sign_in(body: dict):
    answer = signing_in.sign_in(body["email"], body["password"])
    if isinstance(answer, Challenge):
        message = ("A code of the second factor is needed: send it with the challenge to /auth/sign-in/mfa"
                   if answer.purpose == "mfa" else
                   "A workspace of yours requires a second factor: enrol one with the challenge at "
                   "/auth/sign-in/mfa-enrol")
        return ok(challenge_shape(answer), message)
    return ok(signed_in_shape(answer), "Signed in; the access token is shown this once")


def complete_sign_in(body: dict):
    signed_in = signing_in.complete_with_code(body["challenge"], code=body.get("code"),
                                              recovery_code=body.get("recoveryCode"))
    return ok(signed_in_shape(signed_in), "Signed in; the access token is shown this once")


def enrol_mfa_to_sign_in(body: dict):
    user_id, email, secret, uri = signing_in.enrol_with_challenge(body["challenge"])
    return ok({"secret": secret, "provisioningUri": uri, "user": {"id": user_id, "email": email}},
              "Add the secret to an authenticator app, then confirm with a code at /auth/sign-in/mfa-confirm; "
              "it is shown this once")


def confirm_mfa_to_sign_in(body: dict):
    signed_in, codes = signing_in.confirm_with_challenge(body["challenge"], body["code"])
    return ok({**signed_in_shape(signed_in), "recoveryCodes": codes},
              "Second factor on and signed in; the recovery codes and the access token are shown this once")
