"""The audit log over HTTP: filters, pages, no secrets, and nothing to change it with."""
from __future__ import annotations

from api.contract import operations

API = "/api/v2"


def _logs(platform, actor, **filters):
    r = platform.client.get(API + "/workspace/logs", params={"workspaceId": actor.workspace_id, **filters},
                            headers=actor.headers)
    assert r.status_code == 200, r.text
    return r.json()["data"]["result"]


def test_entries_name_who_what_when_and_where_without_secrets(platform):
    owner = platform.workspace()
    created = platform.create_key(owner, name="CI", permissions=["calls:read"])
    platform.client.delete(API + "/api-keys", params={"workspaceId": owner.workspace_id, "ids": created["apiKey"]["id"]},
                           headers=owner.headers)
    r = platform.client.post(API + "/webhooks/subscriptions", params={"workspaceId": owner.workspace_id},
                             headers={**owner.headers, "X-Request-ID": "audit-test-1"},
                             json={"url": "https://hooks.example.com/x", "events": ["end-of-call-report"]})
    secret = r.json()["data"]["result"]["signingSecret"]
    result = _logs(platform, owner)
    logs = result["logs"]
    assert [e["operationId"] for e in logs] == ["createWebhookSubscription", "deleteApiKeys", "createApiKey"]
    create = logs[2]
    assert create["resource"] == {"type": "api-keys", "id": created["apiKey"]["id"]}
    assert create["changes"] == {"name": "CI", "userId": owner.user_id, "permissions": ["calls:read"]}
    assert create["actor"]["userId"] == owner.user_id and create["actor"]["kind"] == "access_token"
    assert create["sourceAddress"] and create["occurredAt"].endswith("Z")
    assert logs[0]["requestId"] == "audit-test-1"
    assert logs[1]["changes"] == {"ids": [created["apiKey"]["id"]]}
    text = str(result)
    assert created["key"] not in text and secret not in text and owner.secret not in text


def test_filters_and_pages(platform):
    owner = platform.workspace()
    admin = platform.member(owner, "admin")
    for actor in (owner, admin, owner):
        platform.client.post(API + "/insights", params={"workspaceId": owner.workspace_id}, headers=actor.headers,
                             json={"name": f"field {actor.user_id[:6]} {len(_logs(platform, owner)['logs'])}",
                                   "type": "string"})
    assert _logs(platform, owner)["pagination"]["total"] == 3
    assert _logs(platform, owner, actorUserId=admin.user_id)["pagination"]["total"] == 1
    assert _logs(platform, owner, operationId="createInsight", resourceType="insights")["pagination"]["total"] == 3
    assert _logs(platform, owner, operationId="deleteInsight")["pagination"]["total"] == 0
    page = _logs(platform, owner, limit=2, offset=2)
    assert len(page["logs"]) == 1 and page["pagination"] == {"total": 3, "limit": 2, "offset": 2}
    newest = _logs(platform, owner)["logs"][0]
    assert _logs(platform, owner, since=newest["occurredAt"])["logs"][0]["id"] == newest["id"]
    assert newest["id"] not in [e["id"] for e in _logs(platform, owner, until=newest["occurredAt"])["logs"]]
    assert _logs(platform, owner, resourceId=newest["resource"]["id"])["pagination"]["total"] == 1
    member = platform.member(owner, "member")
    r = platform.client.get(API + "/workspace/logs", params={"workspaceId": owner.workspace_id}, headers=member.headers)
    assert r.status_code == 403 and "workspace:logs-read" in r.json()["data"]["message"]


def test_no_operation_changes_or_deletes_an_entry():
    assert not [o for o in operations() if o.path.startswith("/workspace/logs") and o.method != "get"]
