"""End-of-call-reports posted to the webhook as the call runtime posts them."""

from __future__ import annotations

import orjson

# ``workspace_id=QUERY_LEFT_OUT``: no ``?workspaceId=``, as the call runtime sends a report.
QUERY_LEFT_OUT = object()


def post_report(platform, actor, body, expect=200, headers=None, raw: bytes | None = None, workspace_id=None):
    """POSTs the report with ``?workspaceId=`` the actor's (or ``workspace_id``; none with
    ``QUERY_LEFT_OUT``)."""
    query = {} if workspace_id is QUERY_LEFT_OUT else {"workspaceId": workspace_id or actor.workspace_id}
    response = platform.client.post(
        "/api/v2/webhooks/end-of-call-report", content=raw if raw is not None else orjson.dumps(body),
        params=query,
        headers={"Content-Type": "application/json", **(actor.headers if headers is None else headers)})
    assert response.status_code == expect, response.text
    return response.json()["data"]
