"""Structured-data fields (the insights group), agent insights and a call's structured data over
HTTP: the field rules at their bounds, type checks of values from the API and from the webhook."""
from __future__ import annotations

import pytest

from tests.support import factories
from tests.support.client import Api, owner
from tests.support.reports import post_report


def create(api, expect=200, **body):
    return api("POST", "/insights", expect, json=body)


def test_a_field_is_created_listed_read_updated_and_deleted(platform):
    api = owner(platform)
    made = create(api, name=" sentiment ", type="enum", enumValues=["positive", "negative"],
                  description="The caller's mood.")["insight"]
    assert made["name"] == "sentiment" and made["type"] == "enum" and made["enumValues"] == ["positive", "negative"]
    assert isinstance(made["id"], int)
    second = create(api, name="resolved", type="boolean")["insight"]
    listed = api("GET", "/insights", limit=1, offset=1)
    assert [f["id"] for f in listed["insights"]] == [second["id"]]
    assert listed["pagination"] == {"total": 2, "limit": 1, "offset": 1}
    assert api("GET", f"/insights/{made['id']}")["insight"] == made
    updated = api("PATCH", f"/insights/{made['id']}", json={"name": "mood", "description": None})["insight"]
    assert updated["name"] == "mood" and updated["description"] is None and updated["enumValues"] == made["enumValues"]
    api("DELETE", f"/insights/{made['id']}")
    api("GET", f"/insights/{made['id']}", 404)
    api("DELETE", f"/insights/{made['id']}", 404)


def test_names_are_1_to_100_characters_and_unique_without_case(platform):
    api = owner(platform)
    create(api, name="x" * 100, type="string")
    create(api, 400, name="x" * 101, type="string")
    create(api, 400, name="", type="string")
    create(api, 400, name="   ", type="string")
    create(api, name="Score", type="number")
    message = api.client.post("/api/v2/insights", params={"workspaceId": api.actor.workspace_id},
                              headers=api.actor.headers, json={"name": " score", "type": "string"})
    assert message.status_code == 409 and "score" in message.json()["data"]["message"]
    other = owner(platform)
    create(other, name="score", type="number")  # another workspace's names are its own


def test_enum_values_belong_to_enum_fields_only_and_must_be_distinct(platform):
    api = owner(platform)
    create(api, 400, name="a", type="enum")
    create(api, 400, name="a", type="enum", enumValues=[])
    create(api, 400, name="a", type="enum", enumValues=["x", "x"])
    create(api, 400, name="a", type="string", enumValues=["x"])
    create(api, name="a", type="enum", enumValues=[str(i) for i in range(100)])
    create(api, 400, name="b", type="enum", enumValues=[str(i) for i in range(101)])


def test_an_unknown_or_foreign_field_is_404_and_a_non_integer_id_is_400(platform):
    api = owner(platform)
    foreign = factories.insight(owner(platform).actor)
    api("GET", f"/insights/{foreign}", 404)
    api("PATCH", f"/insights/{foreign}", 404, json={"description": "x"})
    api("GET", "/insights/abc", 400)
    api("GET", "/insights/0", 400)


def test_webhook_values_are_kept_when_of_their_type_and_listed_in_warnings_when_not(platform):
    api = owner(platform)
    factories.insight(api.actor, "score", "number")
    factories.insight(api.actor, "resolved", "boolean")
    factories.insight(api.actor, "sentiment", "enum", ["positive", "negative"])
    factories.insight(api.actor, "note", "string")
    body = factories.report(api.actor, structuredData={
        "score": 4.5, "Resolved": True, "sentiment": "angry", "note": 3, "unknown": 1})
    warnings = post_report(platform, api.actor, body)["result"]["ingestWarnings"]
    assert len(warnings) == 3 and any("sentiment" in w and "one of" in w for w in warnings)
    assert any("note" in w and "string" in w for w in warnings) and any("unknown" in w for w in warnings)
    call = api("GET", f"/call/{body['callId']}")["call"]
    assert call["structuredData"] == {"score": 4.5, "resolved": True}
    assert call["ingestWarnings"] == warnings
    assert api("GET", f"/call/{body['callId']}/structured-data")["structuredData"] == {"score": 4.5, "resolved": True}


@pytest.mark.parametrize("field_type, good, bad", [
    ("number", 3, "3"), ("number", -1e300, True), ("number", 1e300, -1.5e300), ("boolean", False, 0), ("string", "x" * 1000, "x" * 1001),
    ("enum", "b", "c"),
])
def test_setting_values_checks_each_against_its_type_and_names_the_field(platform, field_type, good, bad):
    api = owner(platform)
    factories.insight(api.actor, "f", field_type, ["a", "b"] if field_type == "enum" else None)
    call_id = factories.call(api.actor)
    assert api("PUT", f"/call/{call_id}/structured-data", json={"structuredData": {"f": good}})["structuredData"] \
        == {"f": good}
    response = api.client.put(f"/api/v2/call/{call_id}/structured-data", params={"workspaceId": api.actor.workspace_id},
                              headers=api.actor.headers, json={"structuredData": {"f": bad}})
    assert response.status_code == 400 and "structuredData.f" in response.json()["data"]["message"]
    assert api("GET", f"/call/{call_id}/structured-data")["structuredData"] == {"f": good}  # unchanged


def test_setting_values_replaces_them_and_null_clears_one(platform):
    api = owner(platform)
    factories.insight(api.actor, "a", "number")
    factories.insight(api.actor, "b", "string")
    call_id = factories.call(api.actor, structured_data={"a": 1, "b": "x"})
    assert api("PUT", f"/call/{call_id}/structured-data", json={"structuredData": {"a": None, "b": "y"}})[
        "structuredData"] == {"b": "y"}
    api("PUT", f"/call/{call_id}/structured-data", 400, json={"structuredData": {"nope": 1}})
    api("PUT", "/call/0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f/structured-data", 404, json={"structuredData": {}})
    api("GET", "/call/0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f/structured-data", 404)


def test_a_type_changes_only_while_no_call_holds_a_value(platform):
    api = owner(platform)
    field = factories.insight(api.actor, "f", "enum", ["a", "b"])
    api("PATCH", f"/insights/{field}", json={"type": "string"})  # no values yet
    api("PATCH", f"/insights/{field}", json={"type": "enum", "enumValues": ["a", "b"]})
    factories.call(api.actor, structured_data={"f": "b"})
    api("PATCH", f"/insights/{field}", 409, json={"type": "string"})
    api("PATCH", f"/insights/{field}", 409, json={"enumValues": ["a"]})  # b is held
    assert api("PATCH", f"/insights/{field}", json={"enumValues": ["b", "c"]})["insight"]["enumValues"] == ["b", "c"]
    api("PATCH", f"/insights/{field}", 400, json={})


def test_deleting_a_field_deletes_its_values(platform):
    api = owner(platform)
    field = factories.insight(api.actor, "f", "number")
    call_id = factories.call(api.actor, structured_data={"f": 2})
    api("DELETE", f"/insights/{field}")
    assert api("GET", f"/call/{call_id}")["call"]["structuredData"] == {}


def test_agent_insights_are_set_read_and_checked(platform):
    api = owner(platform)
    agent_id = factories.agent(api.actor)
    a, b = factories.insight(api.actor, "a"), factories.insight(api.actor, "b")
    assert api("GET", f"/agent-insights/{agent_id}")["insights"] == []
    got = api("PUT", f"/agent-insights/{agent_id}", json={"insightIds": [b, a, b]})
    assert [f["id"] for f in got["insights"]] == [a, b] and got["agentId"] == agent_id
    message = api.client.put(f"/api/v2/agent-insights/{agent_id}", params={"workspaceId": api.actor.workspace_id},
                             headers=api.actor.headers, json={"insightIds": [a, 999999]}).json()["data"]["message"]
    assert "999999" in message
    assert [f["id"] for f in api("GET", f"/agent-insights/{agent_id}")["insights"]] == [a, b]  # unchanged
    assert api("PUT", f"/agent-insights/{agent_id}", json={"insightIds": []})["insights"] == []
    api("GET", "/agent-insights/00000000-0000-4000-8000-000000000000", 404)
    api("GET", "/agent-insights/no-such-agent", 400)
    foreign = factories.insight(owner(platform).actor, "x")
    api("PUT", f"/agent-insights/{agent_id}", 400, json={"insightIds": [foreign]})


def test_insight_permissions(platform):
    api = owner(platform)
    field = factories.insight(api.actor)
    agent_id = factories.agent(api.actor)
    viewer = Api(platform, factories.member(api.actor, "viewer"))
    viewer("GET", "/insights")
    viewer("GET", f"/insights/{field}")
    viewer("POST", "/insights", 403, json={"name": "n", "type": "string"})
    viewer("DELETE", f"/insights/{field}", 403)
    viewer("PUT", f"/agent-insights/{agent_id}", 403, json={"insightIds": []})
