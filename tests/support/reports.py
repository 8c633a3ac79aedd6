"""End-of-call-reports posted to the webhook as the call runtime posts them."""

from __future__ import annotations

import orjson


def post_report(platform, actor, body, expect=200, headers=None, raw: bytes | None = None, workspace_id=None):
    response = platform.client.post(
        "/api/v2/webhooks/end-of-call-report", content=raw if raw is not None else orjson.dumps(body),
        params={"workspaceId": workspace_id or actor.workspace_id},
        headers={"Content-Type": "application/json", **(actor.headers if headers is None else headers)})
    assert response.status_code == expect, response.text
    return response.json()["data"]
