"""The authorization matrix: every operation of the contract against every kind of bad credential."""
from __future__ import annotations

from datetime import timedelta

import pytest
import yaml

from api.app import SPEC_DIR, SPEC_FILE

SPEC = yaml.safe_load((SPEC_DIR / SPEC_FILE).read_text())
OPERATIONS = [(path, method, op) for path, item in SPEC["paths"].items()
              for method, op in item.items() if method in ("get", "post", "put", "patch", "delete")]


def request(platform, actor_headers, workspace_id, path, method, op):
    """A request that would succeed for the owner: valid parameters, valid body."""
    url = "/api/v2" + path.replace("{apiKeyId}", "some-id")
    params = {}
    names = [p.get("name") or p["$ref"].rsplit("/", 1)[-1] for p in op.get("parameters", [])]
    if "WorkspaceId" in names:
        params["workspaceId"] = workspace_id
    if "ids" in names:
        params["ids"] = "some-id"
    body = {"name": "k", "userId": "someone"} if "requestBody" in op else None
    return platform.client.request(method.upper(), url, params=params, json=body, headers=actor_headers)


def secured(op) -> bool:
    return op.get("security", SPEC["security"]) != []


def bad_credentials(platform, owner):
    """Each kind of credential that must be refused with 401, as (label, headers)."""
    from models.api_keys import ApiKey
    from models.db import database, utcnow
    from models.identity import AccessToken, Membership, User

    def key(**changes):
        result = platform.create_key(owner)
        if changes:
            with database.connection_context():
                ApiKey.update(**changes).where(ApiKey.id == result["apiKey"]["id"]).execute()
        return {"Authorization": f"Bearer {result['key']}"}

    deleted = platform.create_key(owner)
    platform.client.delete("/api/v2/api-keys", params={"workspaceId": owner.workspace_id, "ids": deleted["apiKey"]["id"]},
                           headers=owner.headers)
    expired_token = platform.workspace()
    with database.connection_context():
        AccessToken.update(expires_at=utcnow() - timedelta(seconds=1)).where(
            AccessToken.user == expired_token.user_id).execute()
    deactivated = platform.member(owner, "member")
    deactivated_key = platform.key_actor(deactivated)
    removed = platform.member(owner, "member")
    removed_key = platform.key_actor(removed)
    with database.connection_context():
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
        ("expired key", key(expires_at=utcnow() - timedelta(seconds=1))),
        ("inactive key", key(is_active=False)),
        ("deleted key", {"Authorization": f"Bearer {deleted['key']}"}),
        ("expired token", expired_token.headers),
        ("deactivated user's token", deactivated.headers),
        ("deactivated user's key", deactivated_key.headers),
        ("removed member's key", removed_key.headers),
    ]


@pytest.mark.parametrize("path, method, op", OPERATIONS, ids=[op["operationId"] for *_, op in OPERATIONS])
def test_bad_credentials_get_401(platform, path, method, op):
    assert secured(op)
    owner = platform.workspace()
    for label, headers in bad_credentials(platform, owner):
        r = request(platform, headers, owner.workspace_id, path, method, op)
        assert r.status_code == 401, f"{label}: {r.status_code} {r.text}"
        assert r.json()["success"] is False and r.json()["data"]["message"], label


WORKSPACE_OPERATIONS = [o for o in OPERATIONS if "x-permission" in o[2]]


@pytest.mark.parametrize("path, method, op", WORKSPACE_OPERATIONS, ids=[op["operationId"] for *_, op in WORKSPACE_OPERATIONS])
def test_another_workspace_gets_403(platform, path, method, op):
    owner = platform.workspace()
    other = platform.workspace("other")
    for headers in (owner.headers, platform.key_actor(owner).headers):
        r = request(platform, headers, other.workspace_id, path, method, op)
        assert r.status_code == 403 and "workspaceId" in r.json()["data"]["message"]


@pytest.mark.parametrize("path, method, op", WORKSPACE_OPERATIONS, ids=[op["operationId"] for *_, op in WORKSPACE_OPERATIONS])
def test_missing_permission_gets_403_naming_it(platform, path, method, op):
    owner = platform.workspace()
    needed = op["x-permission"]
    # A key holding everything but the one permission, and a role without it.
    key = platform.key_actor(owner, permissions=["calls:read"])
    viewer = platform.member(owner, "viewer")
    from models.permissions import ROLES
    callers = [key.headers] + ([viewer.headers] if needed not in ROLES["viewer"] else [])
    for headers in callers:
        r = request(platform, headers, owner.workspace_id, path, method, op)
        assert r.status_code == 403, r.text
        assert needed in r.json()["data"]["message"]


def test_every_workspace_operation_names_its_permission():
    from models.permissions import CATALOG
    for path, method, op in OPERATIONS:
        params = [p.get("name") or p["$ref"].rsplit("/", 1)[-1] for p in op.get("parameters", [])]
        if "WorkspaceId" in params:
            assert op.get("x-permission") in CATALOG, op["operationId"]


def test_a_token_in_several_workspaces_acts_in_the_one_named(platform):
    from models.db import database
    from models.identity import add_member
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
