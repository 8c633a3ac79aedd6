"""Custom roles over HTTP: next to the built-in ones, applied on the next request to tokens and keys."""
from __future__ import annotations

from tests.support import factories

API = "/api/v2"


def _params(actor):
    return {"workspaceId": actor.workspace_id}


def _create(platform, actor, name="Reviewer", permissions=("calls:read", "members:read")):
    return platform.client.post(API + "/roles", params=_params(actor), headers=actor.headers,
                                json={"name": name, "permissions": list(permissions)})


def test_custom_roles_are_listed_after_the_built_in_ones(platform):
    owner = platform.workspace()
    assert _create(platform, owner).status_code == 200
    roles = platform.client.get(API + "/roles", params=_params(owner), headers=owner.headers).json()["data"]["result"]
    assert [r["name"] for r in roles["roles"]] == ["owner", "admin", "member", "viewer", "Reviewer"]
    assert roles["roles"][0]["builtIn"] and roles["roles"][0]["memberCount"] == 1
    assert roles["roles"][4]["permissions"] == ["calls:read", "members:read"] and not roles["roles"][4]["builtIn"]
    assert roles["pagination"] == {"total": 5, "limit": 20, "offset": 0}
    page = platform.client.get(API + "/roles", params={**_params(owner), "limit": 2, "offset": 3}, headers=owner.headers)
    assert [r["name"] for r in page.json()["data"]["result"]["roles"]] == ["viewer", "Reviewer"]


def test_a_role_change_applies_on_the_next_request_to_tokens_and_keys(platform):
    owner = platform.workspace()
    role_id = _create(platform, owner).json()["data"]["result"]["role"]["id"]
    reviewer = platform.member(owner, "viewer")
    r = platform.client.patch(f"{API}/members/{reviewer.user_id}", params=_params(owner), headers=owner.headers,
                              json={"role": "Reviewer"})  # by name, stored by id
    assert r.json()["data"]["result"]["member"]["role"] == role_id
    assert r.json()["data"]["result"]["member"]["roleName"] == "Reviewer"
    key = factories.api_key(reviewer)  # frozen as the role is now: calls:read, members:read
    for actor in (reviewer, key):
        assert platform.client.get(API + "/call", params=_params(owner), headers=actor.headers).status_code == 200
        r = platform.client.get(API + "/agents", params=_params(owner), headers=actor.headers)
        assert r.status_code == 403 and "agents:read" in r.json()["data"]["message"]
    r = platform.client.patch(f"{API}/roles/{role_id}", params=_params(owner), headers=owner.headers,
                              json={"permissions": ["agents:read", "members:read"]})
    assert r.status_code == 200, r.text
    # The token follows the role at once; the key keeps its frozen set, intersected with the new role.
    assert platform.client.get(API + "/agents", params=_params(owner), headers=reviewer.headers).status_code == 200
    assert platform.client.get(API + "/call", params=_params(owner), headers=reviewer.headers).status_code == 403
    assert platform.client.get(API + "/agents", params=_params(owner), headers=key.headers).status_code == 403
    assert platform.client.get(API + "/call", params=_params(owner), headers=key.headers).status_code == 403
    assert platform.client.get(API + "/members", params=_params(owner), headers=key.headers).status_code == 200


def test_built_in_roles_cannot_be_changed_and_roles_in_use_not_deleted(platform):
    owner = platform.workspace()
    for method in ("PATCH", "DELETE"):
        r = platform.client.request(method, f"{API}/roles/viewer", params=_params(owner), headers=owner.headers,
                                    json={"name": "x"} if method == "PATCH" else None)
        assert r.status_code == 400 and "built-in" in r.json()["data"]["message"]
    role_id = _create(platform, owner).json()["data"]["result"]["role"]["id"]
    for _ in range(2):
        member = platform.member(owner, "viewer")
        platform.client.patch(f"{API}/members/{member.user_id}", params=_params(owner), headers=owner.headers,
                              json={"role": role_id})
    r = platform.client.delete(f"{API}/roles/{role_id}", params=_params(owner), headers=owner.headers)
    assert r.status_code == 409 and "2 members" in r.json()["data"]["message"]
    r = platform.client.get(f"{API}/roles/{role_id}", params=_params(owner), headers=owner.headers)
    assert r.json()["data"]["result"]["role"]["memberCount"] == 2


def test_an_unused_role_is_deleted_with_its_pending_invitations(platform):
    owner = platform.workspace()
    role_id = _create(platform, owner).json()["data"]["result"]["role"]["id"]
    token = platform.client.post(API + "/invitations", params=_params(owner), headers=owner.headers,
                                 json={"email": "x@example.com", "role": role_id}).json()["data"]["result"]["token"]
    assert platform.client.delete(f"{API}/roles/{role_id}", params=_params(owner), headers=owner.headers).status_code == 200
    assert platform.client.post(API + "/invitations/accept", json={"token": token}).status_code == 400
    assert platform.client.get(f"{API}/roles/{role_id}", params=_params(owner), headers=owner.headers).status_code == 404


def test_role_rules(platform):
    owner = platform.workspace()
    admin = platform.member(owner, "admin")
    r = _create(platform, admin, permissions=["billing:manage"])
    assert r.status_code == 403 and "billing:manage" in r.json()["data"]["message"]
    assert _create(platform, owner).status_code == 200
    r = _create(platform, owner, name="reviewer")
    assert r.status_code == 409 and "already has a role" in r.json()["data"]["message"]
    r = _create(platform, owner, name="Admin")
    assert r.status_code == 400 and "built-in" in r.json()["data"]["message"]
    # Names are unique whatever their case, past ASCII too (which SQLite's LOWER does not fold).
    assert _create(platform, owner, name="Équipe Ölçü").status_code == 200
    for taken in ("Équipe Ölçü", "équipe öLÇÜ"):
        r = _create(platform, owner, name=taken)
        assert r.status_code == 409 and "already has a role" in r.json()["data"]["message"], r.text
    r = _create(platform, owner, name="x", permissions=["calls:fly"])
    assert r.status_code == 400
    # An admin cannot edit a role holding what the admin lacks.
    role_id = _create(platform, owner, name="Billing", permissions=["billing:manage"]).json()["data"]["result"]["role"]["id"]
    r = platform.client.patch(f"{API}/roles/{role_id}", params=_params(admin), headers=admin.headers, json={"name": "B"})
    assert r.status_code == 403
