"""The authorization matrix: every operation of the contract against every kind of bad credential.

The operations, their permissions and the requests sent come from the contract itself (its
parameter and body examples), so an operation added to openapi/ is covered without a line here.
"""
from __future__ import annotations

from datetime import timedelta

import pytest

from api.contract import Operation, operations
from tests.support import factories
from tests.support.examples import encoded, example_path_params, example_request

# Accepting an invitation is the one operation without a credential: its token is one.
OPERATIONS = [o for o in operations() if o.secured]
WORKSPACE_OPERATIONS = [o for o in OPERATIONS if o.permission_rule.permissions]


def request(platform, headers, workspace_id, op: Operation, overrides: dict | None = None):
    """The operation with the contract's example values, acting in ``workspace_id``."""
    path, params, body = example_request(op, workspace_id, overrides=overrides)
    content, content_headers = encoded(op, body)
    return platform.client.request(op.method.upper(), "/api/v2" + path, params=params, content=content,
                                   headers={**content_headers, **headers})


def bad_credentials(platform, owner):
    """Each kind of credential that must be refused with 401, as (label, headers)."""
    from models.identity.tables import Membership, User
    from models.kernel.db import session, utcnow

    deleted = platform.create_key(owner)
    platform.client.delete("/api/v2/api-keys", params={"workspaceId": owner.workspace_id, "ids": deleted["apiKey"]["id"]},
                           headers=owner.headers)
    expired_token = factories.workspace()
    factories.expire_tokens(expired_token)
    deactivated = factories.member(owner, "member")
    deactivated_key = factories.api_key(deactivated)
    removed = factories.member(owner, "member")
    removed_key = factories.api_key(removed)
    with session():
        User.update(is_active=False).where(User.id == deactivated.user_id).execute()
        Membership.delete().where(Membership.user == removed.user_id).execute()
    return [
        ("no header", {}),
        ("empty bearer", {"Authorization": "Bearer "}),
        ("basic scheme", {"Authorization": f"Basic {owner.secret}"}),
        ("no scheme", {"Authorization": owner.secret}),
        ("unknown token", {"Authorization": "Bearer vat_unknown"}),
        ("unknown key", {"Authorization": "Bearer vak_unknown"}),
        ("foreign format", {"Authorization": "Bearer sk-1234"}),
        ("expired key", factories.api_key(owner, expires_at=utcnow() - timedelta(seconds=1)).headers),
        ("inactive key", factories.api_key(owner, is_active=False).headers),
        ("deleted key", {"Authorization": f"Bearer {deleted['key']}"}),
        ("expired token", expired_token.headers),
        ("deactivated user's token", deactivated.headers),
        ("deactivated user's key", deactivated_key.headers),
        ("removed member's key", removed_key.headers),
    ]


def test_only_a_token_or_password_of_its_own_stands_for_the_credential_of_an_operation_without_one():
    # An invitation's, a web-call token's, a share link's, a password or a sign-in's challenge: each
    # single-purpose, hashed, limited per address.
    assert sorted(o.operation_id for o in operations() if not o.secured) == [
        "acceptInvitation", "completeSignIn", "confirmMfaToSignIn", "enrolMfaToSignIn", "getSharedCall",
        "getSharedCallRecording", "redeemWebCallToken", "signIn"]


def test_bad_credentials_get_401(platform):
    """Every operation, in one app: a refused credential changes nothing, and an app per operation
    would cost the walk most of its time."""
    owner = platform.workspace()
    refused = bad_credentials(platform, owner)
    wrong = []
    for op in OPERATIONS:
        for label, headers in refused:
            r = request(platform, headers, owner.workspace_id, op)
            if r.status_code != 401 or r.json()["success"] is not False or not r.json()["data"]["message"]:
                wrong.append(f"{op.operation_id}, {label}: {r.status_code} {r.text[:200]}")
    assert not wrong, "\n".join(wrong)


# The 403 walks, like the 401 ones, send every operation's requests to one app: a refused request
# changes nothing. Their callers send a request or more per operation within the minute, which
# the per-credential limit would cut short (tests/api/test_rate_limits.py tests the limits).
UNLIMITED = [{"rate_limits_enabled": False}]


@pytest.mark.parametrize("settings_overrides", UNLIMITED)
def test_another_workspace_gets_403(platform):
    owner = platform.workspace()
    other = platform.workspace("other")
    callers = (owner.headers, factories.api_key(owner).headers)
    wrong = []
    for op in WORKSPACE_OPERATIONS:
        for headers in callers:
            r = request(platform, headers, other.workspace_id, op)
            if r.status_code != 403 or "workspaceId" not in r.json()["data"]["message"]:
                wrong.append(f"{op.operation_id}: {r.status_code} {r.text[:200]}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("settings_overrides", UNLIMITED)
def test_missing_permission_gets_403_naming_it(platform):
    from models.identity.permissions import CATALOG, ROLES
    owner = platform.workspace()
    viewer = platform.member(owner, "viewer")
    keys: dict[str, dict] = {}  # a key holding everything but the one permission, per permission
    wrong = []
    for op in WORKSPACE_OPERATIONS:
        rule = op.permission_rule
        # An operation whose permission depends on a path parameter is tried with each value.
        variants = [({rule.parameter: value}, permission) for value, permission in rule.by_value] or [({}, rule.fixed)]
        for overrides, needed in variants:
            assert needed == rule.for_path({**example_path_params(op), **overrides})
            if needed not in keys:
                keys[needed] = factories.api_key(owner, permissions=[p for p in CATALOG if p != needed]).headers
            # The key, and a role without the permission.
            callers = [keys[needed]] + ([viewer.headers] if needed not in ROLES["viewer"] else [])
            for headers in callers:
                r = request(platform, headers, owner.workspace_id, op, overrides)
                if r.status_code != 403 or needed not in r.json()["data"]["message"]:
                    wrong.append(f"{op.operation_id} {overrides}, needing {needed}: {r.status_code} {r.text[:200]}")
    assert not wrong, "\n".join(wrong)


def test_every_workspace_operation_names_its_permission():
    from models.identity.permissions import CATALOG
    for op in OPERATIONS:
        if op.parameter("workspaceId"):
            assert op.permission_rule.permissions and set(op.permission_rule.permissions) <= set(CATALOG), op.operation_id


def test_a_token_in_several_workspaces_acts_in_the_one_named(platform):
    from models.identity.accounts import add_member
    from models.kernel.db import database
    first = platform.workspace("first")
    second = platform.workspace("second")
    with database.connection_context():
        add_member(workspace_id=second.workspace_id, email=first.email, role="viewer")
    params = {"workspaceId": second.workspace_id}
    assert platform.client.get("/api/v2/api-keys", params=params, headers=first.headers).status_code == 200
    r = platform.client.post("/api/v2/api-keys", params=params, headers=first.headers,
                             json={"name": "k", "userId": first.user_id})
    assert r.status_code == 403 and "api-keys:write" in r.json()["data"]["message"]


def test_workspace_id_given_twice_is_refused(platform):
    owner = platform.workspace()
    other = platform.workspace("other")
    r = platform.client.get(f"/api/v2/api-keys?workspaceId={owner.workspace_id}&workspaceId={other.workspace_id}",
                            headers=owner.headers)
    assert r.status_code == 400 and "workspaceId" in r.json()["data"]["message"]


def test_a_bad_credential_gets_401_even_when_the_request_is_invalid_too(platform):
    """Admission runs in the handler's thread, after validation; a request refused by validation
    must still be judged on its credential first. Every operation, in one app."""
    owner = platform.workspace()
    wrong = []
    for op in OPERATIONS:
        r = platform.client.request(op.method.upper(), "/api/v2" + op.path.replace("{", "x").replace("}", "x"),
                                    params={"workspaceId": owner.workspace_id, "limit": "many", "unknown": "1"},
                                    headers={"Authorization": "Bearer vak_unknown"}, content=b"{not json")
        if r.status_code != 401:
            wrong.append(f"{op.operation_id}: {r.status_code} {r.text[:200]}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("settings_overrides", [{"default_requests_per_minute": 2}])
def test_an_invalid_request_counts_against_the_limit_and_says_so(platform):
    owner = platform.workspace()
    params = {"workspaceId": owner.workspace_id, "limit": 0}
    first = platform.client.get("/api/v2/api-keys", params=params, headers=owner.headers)
    assert first.status_code == 400 and first.headers["ratelimit-remaining"] == "1"
    second = platform.client.get("/api/v2/api-keys", params=params, headers=owner.headers)
    assert second.status_code == 400 and second.headers["ratelimit-remaining"] == "0"
    third = platform.client.get("/api/v2/api-keys", params={"workspaceId": owner.workspace_id}, headers=owner.headers)
    assert third.status_code == 429
