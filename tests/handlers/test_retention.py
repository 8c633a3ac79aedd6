"""Retention on demand over HTTP: a dry run counts, a purge deletes and is audited with its counts."""
from __future__ import annotations

from datetime import timedelta

from models.kernel.db import utcnow
from tests.support import factories

API = "/api/v2"


def test_purge_on_demand(platform):
    owner = platform.workspace()
    params = {"workspaceId": owner.workspace_id}
    old = factories.call(owner, started_at=utcnow() - timedelta(days=40))
    factories.call(owner, started_at=utcnow() - timedelta(days=1))
    r = platform.client.post(API + "/workspace/retention/purge", params=params, headers=owner.headers, json={})
    assert r.status_code == 400 and "dataRetentionDays" in r.json()["data"]["message"]
    platform.client.patch(API + "/workspace", params=params, headers=owner.headers, json={"settings": {"dataRetentionDays": 30}})
    r = platform.client.post(API + "/workspace/retention/purge", params=params, headers=owner.headers, json={"dryRun": True})
    result = r.json()["data"]["result"]
    assert result["dryRun"] and result["wouldDelete"] == {"calls": 1, "recordings": 0, "transcripts": 1}
    assert platform.client.get(f"{API}/call/{old}", params=params, headers=owner.headers).status_code == 200
    r = platform.client.post(API + "/workspace/retention/purge", params=params, headers=owner.headers, json={})
    assert r.status_code == 200 and r.json()["data"]["result"]["deleted"]["calls"] == 1, r.text
    assert platform.client.get(f"{API}/call/{old}", params=params, headers=owner.headers).status_code == 404
    logs = platform.client.get(API + "/workspace/logs", params={**params, "operationId": "purgeRetention"},
                               headers=owner.headers).json()["data"]["result"]["logs"]
    assert logs[0]["changes"]["deleted"] == {"calls": 1, "recordings": 0, "transcripts": 1}
    assert "deleted" not in logs[1]["changes"] and logs[1]["changes"]["dryRun"] is True
    admin = platform.member(owner, "admin")
    assert platform.client.post(API + "/workspace/retention/purge", params=params, headers=admin.headers,
                                json={"dryRun": True}).status_code == 200
    member = platform.member(owner, "member")
    r = platform.client.post(API + "/workspace/retention/purge", params=params, headers=member.headers, json={"dryRun": True})
    assert r.status_code == 403 and "retention:purge" in r.json()["data"]["message"]
