"""The management API as one actor calls it, through the app under test's client."""

from __future__ import annotations


class Api:
    """``actor``'s requests, in its own workspace (the four handler test files share it). A call
    asserts the status it expects and returns the result of a success, or the ``data`` of an error,
    whose envelope it checks: success false and a message that is a sentence."""

    def __init__(self, platform, actor):
        self.client, self.actor = platform.client, actor

    def __call__(self, method: str, path: str, expect: int = 200, json=None, **params):
        response = self.client.request(method, "/api/v2" + path, json=json, headers=self.actor.headers,
                                       params={"workspaceId": self.actor.workspace_id, **params})
        assert response.status_code == expect, response.text
        body = response.json()
        assert body["success"] is (expect == 200), body
        if expect == 200:
            return body["data"]["result"]
        assert body["data"]["message"].endswith("."), body
        return body["data"]

    def create(self, expect: int = 200, **body):
        """POST /agents: the agent, or the error's data."""
        body.setdefault("name", "Receptionist")
        result = self("POST", "/agents", expect, json=body)
        return result["agent"] if expect == 200 else result

    def save(self, agent_id: str, **config) -> dict | None:
        """A new version of the agent holding ``config`` (the rest at defaults)."""
        return self("PATCH", f"/agents/{agent_id}", json={"config": config})["version"]

    def versions(self, agent_id: str, **params) -> list[dict]:
        return self("GET", f"/versions/agent/{agent_id}", **params)["versions"]


def api(platform) -> Api:
    """The owner of a new workspace."""
    return Api(platform, platform.workspace())


owner = api  # the name the calls tests read with
