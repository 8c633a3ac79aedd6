"""The caller's second factor: enrolMfa, confirmMfa, disableMfa; and an administrator's
resetMemberMfa."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import deleted
from models.identity import mfa, sign_in


def enrol_mfa(principal):
    secret, uri = sign_in.enrol_own(principal)
    return ok({"secret": secret, "provisioningUri": uri},
              "Add the secret to an authenticator app, then confirm with a code at /auth/mfa/confirm; "
              "it is shown this once")


def confirm_mfa(body: dict, principal):
    codes = sign_in.confirm_own(principal, body["code"])
    return ok({"mfaEnabled": True, "recoveryCodes": codes},
              "Second factor on; the recovery codes are shown this once, each good once")


def disable_mfa(body: dict, principal):
    sign_in.disable_own(principal, body["code"])
    return deleted(principal.user_id, "Second factor off; its recovery codes are deleted")


def reset_member_mfa(workspaceId: str, userId: str, principal):
    had = mfa.reset_member(principal, workspace_id=workspaceId, user_id=userId)
    return ok({"userId": userId, "reset": had},
              "Second factor reset; the member enrols again where a workspace requires one" if had
              else "The member had no second factor")
