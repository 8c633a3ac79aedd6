"""A user's own second factor over HTTP, and an administrator's reset of a member's: enrolled with
an access token only (an API key gets 403), confirmed by a current code (ten recovery codes, shown
once), enrolment replaced while pending and refused once on, turned off with a current code; reset
by a holder of members:mfa-reset, never of a member holding more (an admin, an owner's) nor of one
also in a workspace the caller does not administer; after a reset, a workspace that requires a
second factor has the member enrol again. No secret or code reaches the audit log."""
from __future__ import annotations

from models.identity.tables import MfaRecoveryCode, UserMfa
from models.kernel.db import session
from tests.support import factories
from tests.support.client import Api
from tests.support.factories import sign_in as signing

API = "/api/v2"


def call(platform, actor, method, path, expect=200, json=None, **params):
    response = platform.client.request(method, API + path, headers=actor.headers, json=json, params=params)
    assert response.status_code == expect, response.text
    data = response.json()["data"]
    return data["result"] if expect == 200 else data


def not_the(code: str) -> str:
    return "000000" if code != "000000" else "111111"


def test_enrol_confirm_and_turn_off_ones_own_second_factor(platform):
    owner = platform.workspace()
    enrolled = call(platform, owner, "POST", "/auth/mfa/enrol")
    assert enrolled["provisioningUri"].startswith("otpauth://totp/") and enrolled["secret"] in enrolled["provisioningUri"]
    # Enrolling again while pending replaces the secret.
    secret = call(platform, owner, "POST", "/auth/mfa/enrol")["secret"]
    assert secret != enrolled["secret"]
    stale = call(platform, owner, "POST", "/auth/mfa/confirm", 400, json={"code": signing.code(enrolled["secret"])})
    assert stale["code"] == "validation_failed" and "code" in stale["message"]
    confirmed = call(platform, owner, "POST", "/auth/mfa/confirm", json={"code": signing.code(secret)})
    assert confirmed["mfaEnabled"] is True and len(set(confirmed["recoveryCodes"])) == 10
    with session():
        stored = UserMfa.get(UserMfa.user == owner.user_id).secret
        hashes = [h for (h,) in MfaRecoveryCode.select(MfaRecoveryCode.code_hash).tuples()]
    assert secret not in stored and not any(c.replace("-", "") in h for c in confirmed["recoveryCodes"] for h in hashes)
    assert call(platform, owner, "POST", "/auth/mfa/enrol", 409)["code"] == "conflict"
    assert call(platform, owner, "POST", "/auth/mfa/confirm", 409, json={"code": signing.code(secret)})["code"] == "conflict"
    wrong = call(platform, owner, "DELETE", "/auth/mfa", 400, json={"code": not_the(signing.code(secret, 1))})
    assert "code" in wrong["message"]
    call(platform, owner, "DELETE", "/auth/mfa", 400, json={"code": "12345"})  # 5 digits: the contract's rule
    assert call(platform, owner, "DELETE", "/auth/mfa", json={"code": signing.code(secret, 1)}) == {
        "id": owner.user_id, "deleted": True}
    with session():
        assert not UserMfa.select().exists() and not MfaRecoveryCode.select().exists()
    assert call(platform, owner, "DELETE", "/auth/mfa", 409, json={"code": signing.code(secret, 1)})["code"] == "conflict"
    log = call(platform, owner, "GET", "/workspace/logs", workspaceId=owner.workspace_id)["logs"]
    assert {e["operationId"] for e in log} >= {"enrolMfa", "confirmMfa", "disableMfa"}
    assert secret not in str(log) and not any(c in str(log) for c in confirmed["recoveryCodes"])
    assert [e["changes"] for e in log if e["operationId"] == "confirmMfa"] == [{"fields": ["code"]}]


def test_an_api_key_does_not_act_on_a_persons_second_factor(platform):
    owner = platform.workspace()
    key = factories.api_key(owner)
    assert call(platform, key, "POST", "/auth/mfa/enrol", 403)["code"] == "forbidden"
    assert call(platform, key, "POST", "/auth/mfa/confirm", 403, json={"code": "123456"})["code"] == "forbidden"
    assert call(platform, key, "DELETE", "/auth/mfa", 403, json={"code": "123456"})["code"] == "forbidden"
    response = platform.client.post(API + "/auth/mfa/enrol")
    assert response.status_code == 401


def test_wrong_codes_with_a_token_count_against_the_email(platform):
    owner = platform.workspace()
    secret = call(platform, owner, "POST", "/auth/mfa/enrol")["secret"]
    for _ in range(10):
        call(platform, owner, "POST", "/auth/mfa/confirm", 400, json={"code": not_the(signing.code(secret))})
    locked = platform.client.post(API + "/auth/mfa/confirm", headers=owner.headers, json={"code": signing.code(secret)})
    assert locked.status_code == 429 and "Retry-After" in locked.headers


def test_an_administrator_resets_a_members_second_factor_and_the_member_enrols_again(platform):
    owner = platform.workspace()
    admin = platform.member(owner, "admin")
    member = platform.member(owner, "member")
    signing.password(member)
    secret, _ = signing.second_factor(member)
    signing.require_mfa(owner)
    reset = Api(platform, admin)("POST", f"/members/{member.user_id}/mfa-reset")
    assert reset == {"userId": member.user_id, "reset": True}
    assert Api(platform, admin)("POST", f"/members/{member.user_id}/mfa-reset") == {"userId": member.user_id,
                                                                                   "reset": False}
    first = platform.client.post(API + "/auth/sign-in", json={"email": member.email, "password": signing.PASSWORD})
    assert first.json()["data"]["result"]["mfaEnrolmentRequired"] is True
    entry = Api(platform, owner)("GET", "/workspace/logs", operationId="resetMemberMfa")["logs"][0]
    assert entry["resource"] == {"type": "members", "id": member.user_id} and entry["actor"]["userId"] == admin.user_id
    assert secret not in str(entry)


def test_nobody_resets_the_second_factor_of_a_member_holding_more_or_beyond_their_workspaces(platform):
    owner = platform.workspace()
    admin = platform.member(owner, "admin")
    member = platform.member(owner, "member")
    signing.second_factor(owner)
    refused = Api(platform, admin)("POST", f"/members/{owner.user_id}/mfa-reset", 403)
    assert refused["code"] == "forbidden" and "workspace:delete" in refused["message"]
    assert Api(platform, owner)("POST", f"/members/{admin.user_id}/mfa-reset")["userId"] == admin.user_id
    # Without the permission.
    assert "members:mfa-reset" in Api(platform, member)("POST", f"/members/{admin.user_id}/mfa-reset", 403)["message"]
    # A member who also belongs to a workspace the caller does not run.
    elsewhere = platform.workspace("elsewhere")
    with session():
        from models.identity.accounts import add_member
        add_member(workspace_id=elsewhere.workspace_id, email=member.email, role="viewer")
    signing.second_factor(member)
    beyond = Api(platform, owner)("POST", f"/members/{member.user_id}/mfa-reset", 403)
    assert beyond["code"] == "forbidden" and "only they" in beyond["message"]
    # Another workspace's user: not found, and nothing changes.
    assert Api(platform, owner)("POST", f"/members/{elsewhere.user_id}/mfa-reset", 404)["code"] == "not_found"
    with session():
        assert UserMfa.select().where(UserMfa.user == member.user_id).exists()
