"""Workspaces over HTTP: the caller's list, creation, settings, deletion with everything in it."""
from __future__ import annotations

from pathlib import Path

from tests.support import factories

API = "/api/v2"


def _get(platform, actor, path, **params):
    return platform.client.get(API + path, params={"workspaceId": actor.workspace_id, **params}, headers=actor.headers)


def test_create_makes_the_caller_owner_and_lists_it(platform):
    owner = platform.workspace("first")
    r = platform.client.post(API + "/workspaces", headers=owner.headers,
                             json={"name": "  Second  ", "settings": {"timeZone": "Europe/Paris", "dataRetentionDays": 30}})
    assert r.status_code == 200, r.text
    created = r.json()["data"]["result"]["workspace"]
    assert created["name"] == "Second" and created["role"] == "owner"
    assert created["settings"] == {"timeZone": "Europe/Paris", "defaultLanguage": "en", "dataRetentionDays": 30,
                                   "webhookDefaults": {"events": ["end-of-call-report"]},
                                   "sttDefaults": {"language": None, "prompt": None}, "requireMfa": False,
                                   "debitImportedCalls": False,
                                   "speechFilter": {"enabled": False, "profanity": True, "phoneNumbers": True,
                                                    "emails": True, "cardNumbers": True, "phoneRegion": "US",
                                                    "words": []}}
    listed = platform.client.get(API + "/workspaces", headers=owner.headers).json()["data"]["result"]
    assert [w["name"] for w in listed["workspaces"]] == ["first", "Second"] and listed["pagination"]["total"] == 2
    # The new workspace is the caller's to act in, with every permission.
    second = owner.__class__(created["id"], owner.user_id, owner.email, owner.secret)
    assert _get(platform, second, "/workspace/logs").status_code == 200


def test_an_api_key_acts_in_its_own_workspace_only(platform):
    owner = platform.workspace()
    key = platform.key_actor(owner)
    for method, path, body in (("POST", "/workspaces", {"name": "x"}), ("GET", "/workspaces", None),
                               ("GET", "/access-tokens", None), ("POST", "/access-tokens", {})):
        r = platform.client.request(method, API + path, headers=key.headers, json=body)
        assert r.status_code == 403 and "access token" in r.json()["data"]["message"], (path, r.text)


def test_settings_update_field_by_field_and_refuse_what_is_wrong(platform):
    owner = platform.workspace()
    params = {"workspaceId": owner.workspace_id}
    r = platform.client.patch(API + "/workspace", params=params, headers=owner.headers,
                              json={"settings": {"sttDefaults": {"language": "fr"}, "dataRetentionDays": 3650}})
    settings = r.json()["data"]["result"]["workspace"]["settings"]
    assert settings["sttDefaults"] == {"language": "fr", "prompt": None} and settings["dataRetentionDays"] == 3650
    r = platform.client.patch(API + "/workspace", params=params, headers=owner.headers, json={"name": "Renamed"})
    kept = r.json()["data"]["result"]["workspace"]
    assert kept["name"] == "Renamed" and kept["settings"]["sttDefaults"]["language"] == "fr"
    for settings, field in (({"timeZone": "Mars/Olympus"}, "timeZone"), ({"dataRetentionDays": 0}, "dataRetentionDays"),
                            ({"dataRetentionDays": 3651}, "dataRetentionDays"), ({"defaultLanguage": "english!"}, "defaultLanguage")):
        r = platform.client.patch(API + "/workspace", params=params, headers=owner.headers, json={"settings": settings})
        assert r.status_code == 400 and field in r.json()["data"]["message"], r.text
    r = platform.client.patch(API + "/workspace", params=params, headers=owner.headers,
                              json={"settings": {"dataRetentionDays": None}})
    assert r.json()["data"]["result"]["workspace"]["settings"]["dataRetentionDays"] is None
    admin = platform.member(owner, "admin")
    assert platform.client.patch(API + "/workspace", params=params, headers=admin.headers, json={"name": "A"}).status_code == 200
    member = platform.member(owner, "member")
    r = platform.client.patch(API + "/workspace", params=params, headers=member.headers, json={"name": "M"})
    assert r.status_code == 403 and "workspace:settings-write" in r.json()["data"]["message"]


def test_delete_needs_an_owner_and_the_name_and_takes_everything(platform, tmp_path):
    owner = platform.workspace("Doomed")
    other = platform.workspace("Kept")
    admin = platform.member(owner, "admin")
    key = platform.key_actor(owner)
    call_id = factories.call(owner)
    kept_call = factories.call(other)
    upload = platform.client.put(f"{API}/call/{call_id}/recording", params={"workspaceId": owner.workspace_id},
                                 headers={**owner.headers, "Content-Type": "audio/wav"},
                                 content=(Path(__file__).parent.parent / "fixtures" / "jfk.wav").read_bytes())
    assert upload.status_code == 200, upload.text
    directory = tmp_path / "recordings" / owner.workspace_id
    assert any(directory.iterdir())
    params = {"workspaceId": owner.workspace_id}
    # An admin has no workspace:delete; a custom role that holds it is still not an owner.
    r = platform.client.delete(API + "/workspace", params={**params, "confirmName": "Doomed"}, headers=admin.headers)
    assert r.status_code == 403 and "workspace:delete" in r.json()["data"]["message"]
    r = platform.client.delete(API + "/workspace", params={**params, "confirmName": "doomed"}, headers=owner.headers)
    assert r.status_code == 400 and "confirmName" in r.json()["data"]["message"]
    r = platform.client.delete(API + "/workspace", params={**params, "confirmName": "Doomed"}, headers=owner.headers)
    assert r.status_code == 200 and r.json()["data"]["result"] == {"id": owner.workspace_id, "deleted": True, "name": "Doomed"}
    assert not directory.exists()
    assert platform.client.get(API + "/api-keys", params=params, headers=key.headers).status_code == 401
    assert _get(platform, owner, "/workspace").status_code == 403
    from models.calls.tables import Call
    from models.identity.tables import Membership
    from models.kernel.db import session
    from models.kernel.scoping import Workspace
    with session():
        assert not Workspace.select().where(Workspace.id == owner.workspace_id).exists()
        assert not Membership.select().where(Membership.workspace == owner.workspace_id).exists()
        assert [c.id for c in Call.select()] == [kept_call]
    assert _get(platform, other, "/workspace").status_code == 200


def test_a_custom_role_with_workspace_delete_is_still_not_an_owner(platform):
    owner = platform.workspace("Doomed")
    params = {"workspaceId": owner.workspace_id}
    role = platform.client.post(API + "/roles", params=params, headers=owner.headers,
                                json={"name": "Deleter", "permissions": ["workspace:delete", "workspace:read"]})
    deleter = platform.member(owner, "viewer")
    platform.client.patch(f"{API}/members/{deleter.user_id}", params=params, headers=owner.headers,
                          json={"role": role.json()["data"]["result"]["role"]["id"]})
    r = platform.client.delete(API + "/workspace", params={**params, "confirmName": "Doomed"}, headers=deleter.headers)
    assert r.status_code == 403 and "owner" in r.json()["data"]["message"]
