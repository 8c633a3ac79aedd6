"""API keys: every rule of POST /api-keys, DELETE /api-keys, and the list and get operations."""
from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

import pytest

from models.identity.permissions import CATALOG, ROLES

API = "/api/v2/api-keys"


def iso(dt: datetime) -> str:
    return dt.isoformat().replace("+00:00", "Z")


def now() -> datetime:
    return datetime.now(timezone.utc)


def parse(value: str) -> datetime:
    return datetime.fromisoformat(value)


# --- creation: the response ------------------------------------------------------------------

def test_create_returns_the_key_object_and_the_secret_once(platform):
    owner = platform.workspace()
    result = platform.create_key(owner, name="importer")
    key = result["apiKey"]
    assert result["key"] == key["key"] and key["key"].startswith("vak_") and len(key["key"]) > 40
    assert key["workspaceId"] == owner.workspace_id and key["userId"] == owner.user_id
    assert key["name"] == "importer" and key["isActive"] is True and key["lastUsedAt"] is None
    assert key["creator"] == {"id": owner.user_id, "email": owner.email, "displayName": "Owner"}
    assert "rateLimit" not in key
    created = parse(key["createdAt"])
    assert abs((created - now()).total_seconds()) < 60


def test_the_secret_appears_in_no_other_response(platform):
    owner = platform.workspace()
    result = platform.create_key(owner)
    secret, key_id = result["key"], result["apiKey"]["id"]
    params = {"workspaceId": owner.workspace_id}
    listed = platform.client.get(API, params=params, headers=owner.headers)
    got = platform.client.get(f"{API}/{key_id}", params=params, headers=owner.headers)
    for response in (listed, got):
        assert response.status_code == 200
        assert secret not in response.text and '"key"' not in response.text


def test_the_secret_is_stored_only_as_a_hash(platform):
    from models.identity.tables import ApiKey
    from models.kernel.db import database
    owner = platform.workspace()
    secret = platform.create_key(owner)["key"]
    with database.connection_context():
        row = ApiKey.get()
        assert secret not in repr(row.__data__)


# --- creation: name and userId ---------------------------------------------------------------

@pytest.mark.parametrize("name, status", [("", 400), ("a", 200), ("x" * 200, 200), ("x" * 201, 400)])
def test_name_length_is_1_to_200(platform, name, status):
    owner = platform.workspace()
    platform.create_key(owner, name=name, expect=status)


@pytest.mark.parametrize("field", ["name", "userId"])
def test_name_and_user_id_are_required(platform, field):
    owner = platform.workspace()
    body = {"name": "k", "userId": owner.user_id}
    del body[field]
    r = platform.client.post(API, params={"workspaceId": owner.workspace_id}, headers=owner.headers, json=body)
    assert r.status_code == 400
    assert field in r.json()["data"]["message"] and "required" in r.json()["data"]["message"]


def test_empty_user_id_is_rejected(platform):
    owner = platform.workspace()
    r = platform.create_key(owner, userId="", expect=400)
    assert r is None


def test_user_id_must_be_a_member_of_the_workspace(platform):
    owner = platform.workspace()
    outsider = platform.workspace("other")
    r = platform.client.post(API, params={"workspaceId": owner.workspace_id}, headers=owner.headers,
                             json={"name": "k", "userId": outsider.user_id})
    assert r.status_code == 400 and "userId" in r.json()["data"]["message"]


def test_a_key_for_another_member_needs_manage_others(platform):
    owner = platform.workspace()
    member = platform.member(owner, "member")
    r = platform.client.post(API, params={"workspaceId": owner.workspace_id}, headers=member.headers,
                             json={"name": "k", "userId": owner.user_id})
    assert r.status_code == 403 and "api-keys:manage-others" in r.json()["data"]["message"]
    made = platform.create_key(owner, userId=member.user_id)["apiKey"]
    assert made["userId"] == member.user_id and made["creator"]["id"] == member.user_id
    # The key can hold no more than the member's role, whoever created it.
    assert set(made["permissions"]) == ROLES["member"]


def test_unknown_body_fields_are_rejected(platform):
    owner = platform.workspace()
    r = platform.client.post(API, params={"workspaceId": owner.workspace_id}, headers=owner.headers,
                             json={"name": "k", "userId": owner.user_id, "isActive": False})
    assert r.status_code == 400 and "isActive" in r.json()["data"]["message"]


# --- creation: expiresAt ---------------------------------------------------------------------

def test_expiry_defaults_to_90_days(platform):
    owner = platform.workspace()
    expires = parse(platform.create_key(owner)["apiKey"]["expiresAt"])
    assert abs((expires - (now() + timedelta(days=90))).total_seconds()) < 60


@pytest.mark.parametrize("offset, status", [
    (timedelta(seconds=-5), 400),              # in the past
    (timedelta(seconds=30), 200),              # just in the future
    (timedelta(days=365, seconds=-30), 200),   # the maximum, less the time the request takes
    (timedelta(days=365, seconds=30), 400),    # just past the maximum
])
def test_expiry_must_be_in_the_future_and_at_most_365_days_ahead(platform, offset, status):
    owner = platform.workspace()
    expires_at = now() + offset
    result = platform.create_key(owner, expiresAt=iso(expires_at), expect=status)
    if status == 200:
        assert abs((parse(result["apiKey"]["expiresAt"]) - expires_at).total_seconds()) < 0.01


@pytest.mark.parametrize("value", ["tomorrow", "2030-01-01", "2030-01-01T00:00:00",
                                   "0001-01-01T00:00:00+23:59", "9999-12-31T23:59:59-23:59"])
def test_expiry_must_be_a_date_time_with_a_zone(platform, value):
    owner = platform.workspace()
    r = platform.client.post(API, params={"workspaceId": owner.workspace_id}, headers=owner.headers,
                             json={"name": "k", "userId": owner.user_id, "expiresAt": value})
    assert r.status_code == 400 and "expiresAt" in r.json()["data"]["message"]


def test_expiry_in_another_zone_is_normalised_to_utc(platform):
    owner = platform.workspace()
    local = (now() + timedelta(days=10)).astimezone(timezone(timedelta(hours=5, minutes=30)))
    result = platform.create_key(owner, expiresAt=local.isoformat())
    assert parse(result["apiKey"]["expiresAt"]) == local.astimezone(timezone.utc).replace(
        microsecond=local.microsecond // 1000 * 1000)


def test_expiry_cannot_change_after_creation(platform):
    owner = platform.workspace()
    key_id = platform.create_key(owner)["apiKey"]["id"]
    for method in ("put", "patch"):
        r = getattr(platform.client, method)(f"{API}/{key_id}", params={"workspaceId": owner.workspace_id},
                                            headers=owner.headers, json={"expiresAt": iso(now())})
        assert r.status_code == 405


# --- creation: rateLimit ---------------------------------------------------------------------

@pytest.mark.parametrize("rate_limit, status", [
    ({"requestsPerMinute": 1, "requestsPerDay": 1}, 200),
    ({"requestsPerMinute": 0, "requestsPerDay": 10}, 400),
    ({"requestsPerMinute": 10, "requestsPerDay": 0}, 400),
    ({"requestsPerMinute": -1, "requestsPerDay": 10}, 400),
    ({"requestsPerMinute": 1.5, "requestsPerDay": 10}, 400),
    ({"requestsPerMinute": "5", "requestsPerDay": 10}, 400),
    ({"requestsPerMinute": 10}, 400),
    ({"requestsPerDay": 10}, 400),
])
def test_rate_limit_needs_both_integers_above_zero(platform, rate_limit, status):
    owner = platform.workspace()
    result = platform.create_key(owner, rateLimit=rate_limit, expect=status)
    if status == 200:
        assert result["apiKey"]["rateLimit"] == rate_limit


# --- creation: permissions -------------------------------------------------------------------

def test_permissions_default_to_the_creators_full_set(platform):
    owner = platform.workspace()
    assert platform.create_key(owner)["apiKey"]["permissions"] == list(CATALOG)
    viewer = platform.member(owner, "viewer")
    viewer_key = platform.create_key(viewer, expect=403)
    assert viewer_key is None  # a viewer lacks api-keys:write


def test_permissions_are_frozen_in_catalog_order(platform):
    owner = platform.workspace()
    key = platform.create_key(owner, permissions=["calls:read", "agents:read", "calls:read"])["apiKey"]
    assert key["permissions"] == ["agents:read", "calls:read"]


def test_an_empty_permission_list_gives_a_key_without_permissions(platform):
    owner = platform.workspace()
    assert platform.create_key(owner, permissions=[])["apiKey"]["permissions"] == []


def test_permissions_must_be_catalog_values(platform):
    owner = platform.workspace()
    r = platform.client.post(API, params={"workspaceId": owner.workspace_id}, headers=owner.headers,
                             json={"name": "k", "userId": owner.user_id, "permissions": ["calls:read", "calls:fly"]})
    assert r.status_code == 400
    assert "permissions" in r.json()["data"]["message"] and "calls:fly" in r.json()["data"]["message"]


def test_permissions_must_be_a_subset_of_the_creators(platform):
    owner = platform.workspace()
    member = platform.member(owner, "member")
    r = platform.client.post(API, params={"workspaceId": owner.workspace_id}, headers=member.headers,
                             json={"name": "k", "userId": member.user_id, "permissions": ["calls:read", "billing:manage"]})
    assert r.status_code == 403 and "billing:manage" in r.json()["data"]["message"]


def test_a_key_cannot_create_a_key_with_more_than_it_holds(platform):
    owner = platform.workspace()
    narrow = platform.key_actor(owner, permissions=["api-keys:write", "calls:read"])
    platform.create_key(narrow, permissions=["calls:read"])
    r = platform.client.post(API, params={"workspaceId": owner.workspace_id}, headers=narrow.headers,
                             json={"name": "k", "userId": owner.user_id, "permissions": ["calls:write"]})
    assert r.status_code == 403 and "calls:write" in r.json()["data"]["message"]
    # Without a list, a key made by a key gets what the creating key holds, not the user's full set.
    assert platform.create_key(narrow)["apiKey"]["permissions"] == ["calls:read", "api-keys:write"]


def test_frozen_permissions_shrink_with_the_users_role(platform):
    from models.identity.tables import Membership
    from models.kernel.db import database
    owner = platform.workspace()
    member = platform.member(owner, "member")
    key = platform.key_actor(member, permissions=["api-keys:read", "api-keys:write"])
    platform.create_key(key)
    with database.connection_context():
        Membership.update(role="viewer").where(Membership.user == member.user_id).execute()
    # The key still lists api-keys:write, but its user no longer holds it.
    r = platform.client.post(API, params={"workspaceId": owner.workspace_id}, headers=key.headers,
                             json={"name": "k", "userId": member.user_id})
    assert r.status_code == 403 and "api-keys:write" in r.json()["data"]["message"]
    assert platform.client.get(API, params={"workspaceId": owner.workspace_id}, headers=key.headers).status_code == 200


# --- list and get ----------------------------------------------------------------------------

def test_list_is_paginated_newest_first(platform):
    owner = platform.workspace()
    ids = [platform.create_key(owner, name=f"k{i}")["apiKey"]["id"] for i in range(5)]
    params = {"workspaceId": owner.workspace_id, "limit": 2, "offset": 1}
    result = platform.client.get(API, params=params, headers=owner.headers).json()["data"]["result"]
    assert [k["id"] for k in result["apiKeys"]] == ids[::-1][1:3]
    assert result["pagination"] == {"total": 5, "limit": 2, "offset": 1}


@pytest.mark.parametrize("params, status", [
    ({"limit": 1}, 200), ({"limit": 100}, 200), ({"limit": 0}, 400), ({"limit": 101}, 400),
    ({"offset": 0}, 200), ({"offset": -1}, 400), ({"limit": "many"}, 400),
])
def test_list_page_bounds(platform, params, status):
    owner = platform.workspace()
    r = platform.client.get(API, params={"workspaceId": owner.workspace_id, **params}, headers=owner.headers)
    assert r.status_code == status
    if status == 400:
        assert next(iter(params)) in r.json()["data"]["message"]


def test_members_see_their_own_keys_admins_see_all(platform):
    owner = platform.workspace()
    member = platform.member(owner, "member")
    admin = platform.member(owner, "admin")
    mine = platform.create_key(member)["apiKey"]["id"]
    theirs = platform.create_key(owner)["apiKey"]["id"]
    params = {"workspaceId": owner.workspace_id}
    seen_by_member = [k["id"] for k in platform.client.get(API, params=params, headers=member.headers).json()["data"]["result"]["apiKeys"]]
    seen_by_admin = [k["id"] for k in platform.client.get(API, params=params, headers=admin.headers).json()["data"]["result"]["apiKeys"]]
    assert seen_by_member == [mine] and set(seen_by_admin) == {mine, theirs}
    assert platform.client.get(f"{API}/{theirs}", params=params, headers=member.headers).status_code == 404
    assert platform.client.get(f"{API}/{mine}", params=params, headers=admin.headers).status_code == 200


def test_get_unknown_key_is_404_in_the_envelope(platform):
    owner = platform.workspace()
    nope = "00000000-0000-4000-8000-000000000000"
    r = platform.client.get(f"{API}/{nope}", params={"workspaceId": owner.workspace_id}, headers=owner.headers)
    assert r.status_code == 404 and r.json()["data"]["code"] == "not_found" and nope in r.json()["data"]["message"]
    r = platform.client.get(f"{API}/nope", params={"workspaceId": owner.workspace_id}, headers=owner.headers)
    assert r.status_code == 400 and "apiKeyId" in r.json()["data"]["message"]  # ids are UUIDs


def test_another_workspaces_key_is_unreachable_by_its_id(platform):
    owner = platform.workspace()
    other = platform.workspace("other")
    foreign = platform.create_key(other)["apiKey"]["id"]
    mine = {"workspaceId": owner.workspace_id}
    assert platform.client.get(f"{API}/{foreign}", params=mine, headers=owner.headers).status_code == 404
    listed = platform.client.get(API, params=mine, headers=owner.headers).json()["data"]["result"]["apiKeys"]
    assert foreign not in [key["id"] for key in listed]
    theirs = {"workspaceId": other.workspace_id}
    assert platform.client.get(f"{API}/{foreign}", params=theirs, headers=owner.headers).status_code == 403
    assert platform.client.delete(API, params={**theirs, "ids": foreign}, headers=owner.headers).status_code == 403
    assert platform.client.get(f"{API}/{foreign}", params=theirs, headers=other.headers).status_code == 200


def test_last_used_at_is_kept_current(platform):
    owner = platform.workspace()
    key = platform.key_actor(owner)
    params = {"workspaceId": owner.workspace_id}
    platform.client.get(API, params=params, headers=key.headers)
    listed = platform.client.get(API, params=params, headers=owner.headers).json()["data"]["result"]["apiKeys"]
    used = parse(listed[0]["lastUsedAt"])
    assert abs((used - now()).total_seconds()) < 60


# --- delete ----------------------------------------------------------------------------------

def delete(platform, actor, ids, workspace_id=None):
    return platform.client.delete(API, params={"workspaceId": workspace_id or actor.workspace_id, "ids": ids},
                                  headers=actor.headers)


def test_delete_counts_only_keys_of_the_workspace(platform):
    owner = platform.workspace()
    other = platform.workspace("other")
    a, b = (platform.create_key(owner)["apiKey"]["id"] for _ in range(2))
    foreign = platform.create_key(other)["apiKey"]["id"]
    r = delete(platform, owner, f"{a},{b},{foreign},{uuid.uuid4()},{a}")
    assert r.status_code == 200
    assert r.json()["data"]["result"] == {"success": True, "deletedCount": 2}
    params = {"workspaceId": other.workspace_id}
    assert platform.client.get(f"{API}/{foreign}", params=params, headers=other.headers).status_code == 200


def test_members_cannot_delete_other_users_keys(platform):
    owner = platform.workspace()
    member = platform.member(owner, "member")
    theirs = platform.create_key(owner)["apiKey"]["id"]
    assert delete(platform, member, theirs).json()["data"]["result"]["deletedCount"] == 0
    assert delete(platform, owner, theirs).json()["data"]["result"]["deletedCount"] == 1


def test_a_deleted_key_stops_working_at_once(platform):
    owner = platform.workspace()
    key = platform.create_key(owner)
    headers = {"Authorization": f"Bearer {key['key']}"}
    params = {"workspaceId": owner.workspace_id}
    assert platform.client.get(API, params=params, headers=headers).status_code == 200
    assert delete(platform, owner, key["apiKey"]["id"]).json()["data"]["result"]["deletedCount"] == 1
    r = platform.client.get(API, params=params, headers=headers)
    assert r.status_code == 401 and r.json()["success"] is False


@pytest.mark.parametrize("ids", ["", ",", " , ,"])
def test_delete_needs_at_least_one_id(platform, ids):
    owner = platform.workspace()
    r = delete(platform, owner, ids)
    assert r.status_code == 400 and "ids" in r.json()["data"]["message"]


def test_delete_takes_at_most_100_ids(platform):
    owner = platform.workspace()
    assert delete(platform, owner, ",".join(str(uuid.uuid4()) for _ in range(100))).status_code == 200
    r = delete(platform, owner, ",".join(str(uuid.uuid4()) for _ in range(101)))
    assert r.status_code == 400 and "100" in r.json()["data"]["message"]


def test_delete_needs_the_workspace_id(platform):
    owner = platform.workspace()
    r = platform.client.delete(API, params={"ids": "x"}, headers=owner.headers)
    assert r.status_code == 400 and "workspaceId" in r.json()["data"]["message"]
