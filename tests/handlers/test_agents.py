"""Agents over HTTP: create (defaults, validation), list, get, update (when a version is made), and
delete (refused while a workflow uses the agent)."""
from __future__ import annotations

from itertools import pairwise

from tests.support import factories
from tests.support.client import Api, api

# The default configuration as the design states it (not read from the schema file, so that a
# changed default is noticed here).
DEFAULTS = {
    "prompt": "You are a helpful voice assistant.",
    "firstMessage": "Hello! How can I help you today?",
    "voice": {"provider": "default", "voiceId": "alloy"},
    "language": "en",
    "model": {"provider": "openai", "name": "gpt-4o-mini", "temperature": 0.7, "maxTokens": 1024},
    "tools": [],
    "endCallPhrases": [],
    "maxDurationSeconds": 1800,
    "metadata": {},
}
SUMMARY_FIELDS = {"id", "workspaceId", "name", "createdAt", "updatedAt", "createdBy", "headVersionId",
                  "headVersionNumber", "publishedVersionId", "publishedVersionNumber"}


def model(**changes) -> dict:
    return {**DEFAULTS["model"], **changes}


def tools(count: int) -> list[dict]:
    return [{"name": f"tool_{i}"} for i in range(count)]


def workflow_using(call: Api, name: str, *agent_ids: str) -> str:
    """A workflow routing start -> each agent -> end; its id."""
    nodes = ([{"id": "start", "type": "start"}] + [{"id": f"a{i}", "type": "agent", "agentId": agent_id}
             for i, agent_id in enumerate(agent_ids)] + [{"id": "end", "type": "end"}])
    edges = [{"from": a["id"], "to": b["id"]} for a, b in pairwise(nodes)]
    return call("POST", "/workflows", json={"name": name, "config": {"nodes": nodes, "edges": edges}})["workflow"]["id"]


# --- create ----------------------------------------------------------------------------------

def test_create_with_only_a_name_gives_the_default_configuration_published_as_version_1(platform):
    call = api(platform)
    agent = call.create(name="Receptionist")
    assert agent["config"] == DEFAULTS and agent["liveConfig"] == DEFAULTS
    assert agent["name"] == "Receptionist" and agent["workspaceId"] == call.actor.workspace_id
    assert agent["createdBy"] == call.actor.user_id
    assert agent["headVersionNumber"] == 1 and agent["publishedVersionNumber"] == 1
    assert agent["publishedVersionId"] == agent["headVersionId"]
    [version] = call.versions(agent["id"])
    assert version["id"] == agent["headVersionId"] and version["versionNumber"] == 1
    assert version["isPublished"] is True and version["publishedBy"] == call.actor.user_id
    assert version["parentVersionId"] is None
    assert call("GET", f"/agents/{agent['id']}")["agent"] == agent


def test_a_partial_configuration_takes_the_defaults_for_the_rest(platform):
    call = api(platform)
    given = {"prompt": "Answer in one sentence.", "tools": [{"name": "lookup", "description": "Finds an order."}]}
    agent = call.create(config=given, versionName="First draft")
    assert agent["config"] == {**DEFAULTS, **given}
    assert call.versions(agent["id"])[0]["name"] == "First draft"


def test_values_at_their_bounds_are_accepted(platform):
    call = api(platform)
    for config in ({"model": model(temperature=2)}, {"model": model(temperature=0)}, {"language": "en-US"},
                   {"tools": tools(64)}, {"maxDurationSeconds": 10}, {"maxDurationSeconds": 43200}):
        assert call.create(config=config)["config"] == {**DEFAULTS, **config}
    assert call.create(name="x" * 100)["name"] == "x" * 100
    assert call.create(name="x")["name"] == "x"


def test_an_unknown_configuration_key_is_refused_naming_it(platform):
    call = api(platform)
    assert "voiceSpeed" in call.create(400, config={"voiceSpeed": 1.2})["message"]
    assert "topP" in call.create(400, config={"model": {**model(), "topP": 0.9}})["message"]
    assert call("GET", "/agents")["pagination"]["total"] == 0


def test_values_past_their_bounds_are_refused_naming_the_field(platform):
    call = api(platform)
    cases = [
        ({"config": {"model": model(temperature=2.1)}}, "config.model.temperature"),
        ({"config": {"model": model(temperature=-0.1)}}, "config.model.temperature"),
        ({"config": {"language": "english!"}}, "config.language"),
        ({"config": {"tools": tools(65)}}, "config.tools"),
        ({"config": {"tools": [{"name": "has space"}]}}, "name: 'has space'"),
        ({"config": {"maxDurationSeconds": 9}}, "config.maxDurationSeconds"),
        ({"config": {"endCallPhrases": ["bye"] * 33}}, "config.endCallPhrases"),
        ({"name": ""}, "name"),
        ({"name": "x" * 101}, "name"),
    ]
    for body, field in cases:
        message = call.create(400, **body)["message"]
        assert field in message, (body, message)
    assert call("GET", "/agents")["pagination"]["total"] == 0


# --- list and get ----------------------------------------------------------------------------

def test_the_list_is_newest_first_with_pagination_totals(platform):
    call = api(platform)
    for name in ("first", "second", "third"):
        call.create(name=name)
    factories.agent(platform.workspace("other"), name="elsewhere")
    page = call("GET", "/agents", limit=2)
    assert [a["name"] for a in page["agents"]] == ["third", "second"]
    assert page["pagination"] == {"total": 3, "limit": 2, "offset": 0}
    assert set(page["agents"][0]) == SUMMARY_FIELDS
    page = call("GET", "/agents", limit=100, offset=2)
    assert [a["name"] for a in page["agents"]] == ["first"]
    assert page["pagination"] == {"total": 3, "limit": 100, "offset": 2}
    assert call("GET", "/agents", offset=3) == {"agents": [], "pagination": {"total": 3, "limit": 20, "offset": 3}}


def test_the_list_refuses_limit_and_offset_out_of_range(platform):
    call = api(platform)
    for params, name in (({"limit": 101}, "limit"), ({"limit": 0}, "limit"), ({"offset": -1}, "offset")):
        assert name in call("GET", "/agents", 400, **params)["message"]


def test_another_workspaces_agent_is_not_found(platform):
    ours, theirs = api(platform), api(platform)
    agent_id = theirs.create(name="Theirs")["id"]
    for method, path, body in (("GET", f"/agents/{agent_id}", None), ("PATCH", f"/agents/{agent_id}", {"name": "Mine"}),
                               ("DELETE", f"/agents/{agent_id}", None), ("GET", f"/versions/agent/{agent_id}", None)):
        assert agent_id in ours(method, path, 404, json=body)["message"]
    assert theirs("GET", f"/agents/{agent_id}")["agent"]["name"] == "Theirs"
    assert ours("GET", "/agents")["agents"] == []


# --- update ----------------------------------------------------------------------------------

def test_renaming_makes_no_version(platform):
    call = api(platform)
    agent = call.create()
    result = call("PATCH", f"/agents/{agent['id']}", json={"name": "Front desk"})
    assert result["version"] is None
    assert result["agent"]["name"] == "Front desk" and result["agent"]["headVersionId"] == agent["headVersionId"]
    assert len(call.versions(agent["id"])) == 1


def test_the_same_configuration_makes_no_version(platform):
    call = api(platform)
    agent = call.create(config={"prompt": "Be brief."})
    for config in ({**DEFAULTS, "prompt": "Be brief."}, {"prompt": "Be brief."}):
        result = call("PATCH", f"/agents/{agent['id']}", json={"config": config})
        assert result["version"] is None and result["agent"]["headVersionNumber"] == 1
    assert len(call.versions(agent["id"])) == 1


def test_a_value_of_another_json_type_is_a_changed_configuration(platform):
    # true and 1 are different JSON values (Python's == calls them equal).
    call = api(platform)
    agent = call.create(config={"metadata": {"vip": True}})
    result = call("PATCH", f"/agents/{agent['id']}", json={"config": {"metadata": {"vip": 1}}})
    assert result["version"] is not None and result["version"]["versionNumber"] == 2
    assert result["agent"]["config"]["metadata"] == {"vip": 1}


def test_a_changed_configuration_makes_the_next_version_unpublished(platform):
    call = api(platform)
    agent = call.create(config={"firstMessage": "Hi!"})
    result = call("PATCH", f"/agents/{agent['id']}", json={"config": {"prompt": "Be brief."}, "versionName": "Brief"})
    version, updated = result["version"], result["agent"]
    assert version["versionNumber"] == 2 and version["parentVersionId"] == agent["headVersionId"]
    assert version["isPublished"] is False and version["name"] == "Brief" and version["branchId"] is None
    # The configuration sent is the whole new one: firstMessage, left out, is back to its default.
    assert updated["config"] == {**DEFAULTS, "prompt": "Be brief."}
    assert updated["liveConfig"] == {**DEFAULTS, "firstMessage": "Hi!"}
    assert updated["headVersionId"] == version["id"] and updated["publishedVersionId"] == agent["headVersionId"]
    third = call("PATCH", f"/agents/{agent['id']}", json={"config": {"prompt": "Be kind."}})["version"]
    assert third["versionNumber"] == 3 and third["parentVersionId"] == version["id"]


def test_an_update_with_nothing_or_a_bad_value_is_refused_and_saves_nothing(platform):
    call = api(platform)
    agent = call.create()
    assert "non-empty" in call("PATCH", f"/agents/{agent['id']}", 400, json={})["message"]
    message = call("PATCH", f"/agents/{agent['id']}", 400,
                   json={"name": "Renamed", "config": {"model": model(maxTokens=32769)}})["message"]
    assert "config.model.maxTokens" in message
    assert call("GET", f"/agents/{agent['id']}")["agent"] == agent


# --- delete ----------------------------------------------------------------------------------

def test_a_deleted_agent_and_its_versions_are_gone(platform):
    call = api(platform)
    agent_id = call.create()["id"]
    call.save(agent_id, prompt="Be brief.")
    assert call("DELETE", f"/agents/{agent_id}") == {"id": agent_id, "deleted": True}
    call("GET", f"/agents/{agent_id}", 404)
    call("GET", f"/versions/agent/{agent_id}", 404)
    call("DELETE", f"/agents/{agent_id}", 404)
    assert call("GET", "/agents")["pagination"]["total"] == 0


def test_an_agent_a_workflow_uses_is_kept_until_no_live_or_head_configuration_names_it(platform):
    call = api(platform)
    agent_id, spare_id = call.create()["id"], call.create(name="Spare")["id"]
    support = workflow_using(call, "Support line", agent_id)
    sales = workflow_using(call, "Sales line", agent_id, spare_id)
    message = call("DELETE", f"/agents/{agent_id}", 409)["message"]
    assert all(text in message for text in ("Support line", support, "Sales line", sales)), message

    call("DELETE", f"/workflows/{sales}")
    message = call("DELETE", f"/agents/{agent_id}", 409)["message"]
    assert support in message and sales not in message
    # The head stops naming it; the published version, live, still does.
    head = call("PATCH", f"/workflows/{support}", json={"config": {}})["version"]
    assert support in call("DELETE", f"/agents/{agent_id}", 409)["message"]
    call("POST", f"/versions/workflow/{support}/{head['id']}/publish")
    assert call("DELETE", f"/agents/{agent_id}")["deleted"] is True


def test_an_agent_named_only_by_an_open_branch_of_a_workflow_is_kept_until_the_branch_closes(platform):
    call = api(platform)
    agent_id = call.create()["id"]
    workflow = call("POST", "/workflows", json={"name": "Triage"})["workflow"]
    branch = call("POST", f"/branches/workflow/{workflow['id']}",
                  json={"name": "Add an agent", "baseVersionId": workflow["headVersionId"]})["branch"]
    nodes = [{"id": "start", "type": "start"}, {"id": "agent", "type": "agent", "agentId": agent_id},
             {"id": "end", "type": "end"}]
    edges = [{"from": "start", "to": "agent"}, {"from": "agent", "to": "end"}]
    call("POST", f"/branches/workflow/{workflow['id']}/{branch['id']}/commits",
         json={"config": {"nodes": nodes, "edges": edges}})
    assert workflow["id"] in call("DELETE", f"/agents/{agent_id}", 409)["message"]
    call("POST", f"/branches/workflow/{workflow['id']}/{branch['id']}/close")
    assert call("DELETE", f"/agents/{agent_id}")["deleted"] is True


def test_agent_operations_follow_the_roles(platform):
    owner = api(platform)
    viewer = Api(platform, platform.member(owner.actor, "viewer"))
    member = Api(platform, platform.member(owner.actor, "member"))
    agent_id = owner.create()["id"]
    assert viewer("GET", f"/agents/{agent_id}")["agent"]["id"] == agent_id
    assert "agents:write" in viewer.create(403)["message"]
    assert "agents:write" in viewer("PATCH", f"/agents/{agent_id}", 403, json={"name": "x"})["message"]
    assert "agents:delete" in viewer("DELETE", f"/agents/{agent_id}", 403)["message"]
    assert member("DELETE", f"/agents/{agent_id}")["deleted"] is True
