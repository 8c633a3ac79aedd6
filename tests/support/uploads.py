"""Call recordings uploaded over the management API."""

from __future__ import annotations

from tests.support.client import Api
from tests.support.speech import FIXTURES

WAV = (FIXTURES / "jfk.wav").read_bytes()


def upload(api: Api, call_id: str, body, content_type: str = "audio/wav", expect: int = 200, headers=None):
    response = api.client.put(f"/api/v2/call/{call_id}/recording", content=body,
                              params={"workspaceId": api.actor.workspace_id},
                              headers={**api.actor.headers, "Content-Type": content_type, **(headers or {})})
    assert response.status_code == expect, response.text
    body = response.json()
    assert body["success"] is (expect == 200)
    return body["data"]["result"] if expect == 200 else body["data"]
