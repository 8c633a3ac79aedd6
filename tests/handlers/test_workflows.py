"""Workflows over HTTP: the default graph, the graph rules (edges, start node, node ids, agent
nodes naming agents of the workspace), list, get, update and delete."""
from __future__ import annotations

from tests.support import factories
from tests.support.client import Api, api

DEFAULTS = {
    "nodes": [{"id": "start", "type": "start"}, {"id": "end", "type": "end"}],
    "edges": [{"from": "start", "to": "end"}],
    "metadata": {},
}
START, END = {"id": "start", "type": "start"}, {"id": "end", "type": "end"}


def graph(*nodes: dict, edges: list[tuple[str, str]] = ()) -> dict:
    return {"nodes": list(nodes), "edges": [{"from": a, "to": b} for a, b in edges]}


def agent_node(node_id: str, agent_id: str) -> dict:
    return {"id": node_id, "type": "agent", "agentId": agent_id}


def create(call: Api, expect: int = 200, **body):
    """POST /workflows: the workflow, or the error's data."""
    body.setdefault("name", "Triage")
    result = call("POST", "/workflows", expect, json=body)
    return result["workflow"] if expect == 200 else result


def test_create_with_only_a_name_gives_the_default_graph_published_as_version_1(platform):
    call = api(platform)
    workflow = create(call, name="Triage")
    assert workflow["config"] == DEFAULTS and workflow["liveConfig"] == DEFAULTS
    assert workflow["headVersionNumber"] == 1 and workflow["publishedVersionId"] == workflow["headVersionId"]
    assert call("GET", f"/workflows/{workflow['id']}")["workflow"] == workflow


def test_a_graph_routing_between_agents_of_the_workspace_is_saved_as_sent(platform):
    call = api(platform)
    first, second = factories.agent(call.actor, "first"), factories.agent(call.actor, "second")
    config = {**graph(START, agent_node("greet", first), agent_node("bill", second),
                      {"id": "human", "type": "transfer", "phoneNumber": "+4930123456", "message": "One moment."}, END,
                      edges=[("start", "greet"), ("greet", "bill"), ("greet", "human"), ("bill", "end")]),
              "metadata": {"team": "billing"}}
    config["edges"][1]["condition"] = "The caller asks about an invoice."
    assert create(call, config=config)["config"] == config


def test_graphs_that_break_a_rule_are_refused_naming_the_edge_or_node(platform):
    call = api(platform)
    agent_id = factories.agent(call.actor)
    cases = [
        (graph(START, END, edges=[("start", "end"), ("start", "nowhere")]), ["config.edges[1].to", "'nowhere'"]),
        (graph(START, END, edges=[("ghost", "end")]), ["config.edges[0].from", "'ghost'"]),
        (graph(END), ["no start node"]),
        (graph(START, {"id": "again", "type": "start"}, END), ["one start node", "start, again"]),
        (graph(START, {"id": "end", "type": "end"}, {"id": "end", "type": "transfer"}), ["unique", "end"]),
        (graph(START, {"id": "helper", "type": "agent"}, END), ["config.nodes[1]", "helper", "agentId"]),
        (graph(START, {"id": "out", "type": "transfer", "phoneNumber": "030 123"}, END), ["phoneNumber"]),
        (graph(START, {"id": "x", "type": "agentt", "agentId": agent_id}), ["type"]),
        (graph(), ["nodes"]),
    ]
    for config, words in cases:
        message = create(call, 400, config=config)["message"]
        assert all(word in message for word in words), (config, message)
    assert call("GET", "/workflows")["pagination"]["total"] == 0


def test_an_agent_node_must_name_an_agent_of_the_workspace(platform):
    call = api(platform)
    theirs = factories.agent(platform.workspace("other"))
    a_workflow = create(call, name="Not an agent")["id"]
    for agent_id in (theirs, "5f0c6a7e-0000-4000-8000-000000000000", a_workflow):
        message = create(call, 400, config=graph(START, agent_node("helper", agent_id), END))["message"]
        assert agent_id in message, message
    ours = factories.agent(call.actor)
    workflow = create(call, config=graph(START, agent_node("helper", ours), END, edges=[("start", "helper")]))
    # An update is checked the same way, and a refused one saves nothing.
    message = call("PATCH", f"/workflows/{workflow['id']}", 400,
                   json={"config": graph(START, agent_node("helper", theirs), END)})["message"]
    assert theirs in message
    assert call("GET", f"/workflows/{workflow['id']}")["workflow"] == workflow
    assert call("GET", "/workflows")["pagination"]["total"] == 2


def test_the_list_is_newest_first_with_pagination_totals(platform):
    call = api(platform)
    for name in ("first", "second", "third"):
        create(call, name=name)
    page = call("GET", "/workflows", limit=2, offset=1)
    assert [w["name"] for w in page["workflows"]] == ["second", "first"]
    assert page["pagination"] == {"total": 3, "limit": 2, "offset": 1}
    assert "config" not in page["workflows"][0] and "liveConfig" not in page["workflows"][0]
    assert call("GET", "/workflows", limit=100)["pagination"]["total"] == 3
    assert "limit" in call("GET", "/workflows", 400, limit=101)["message"]
    assert "offset" in call("GET", "/workflows", 400, offset=-1)["message"]


def test_update_makes_a_version_only_for_a_changed_graph(platform):
    call = api(platform)
    workflow = create(call)
    assert call("PATCH", f"/workflows/{workflow['id']}", json={"config": DEFAULTS})["version"] is None
    changed = graph(START, {"id": "bye", "type": "end", "message": "Goodbye."}, edges=[("start", "bye")])
    result = call("PATCH", f"/workflows/{workflow['id']}", json={"config": changed})
    assert result["version"]["versionNumber"] == 2 and result["version"]["isPublished"] is False
    assert result["workflow"]["config"] == {**changed, "metadata": {}}
    assert result["workflow"]["liveConfig"] == DEFAULTS


def test_another_workspaces_workflow_is_not_found_and_a_deleted_one_is_gone(platform):
    ours, theirs = api(platform), api(platform)
    their_id = create(theirs)["id"]
    ours("GET", f"/workflows/{their_id}", 404)
    ours("DELETE", f"/workflows/{their_id}", 404)
    our_id = create(ours)["id"]
    assert ours("DELETE", f"/workflows/{our_id}") == {"id": our_id, "deleted": True}
    ours("GET", f"/workflows/{our_id}", 404)
    ours("GET", f"/versions/workflow/{our_id}", 404)
    assert theirs("GET", f"/workflows/{their_id}")["workflow"]["id"] == their_id


def test_deleting_a_workflow_frees_the_agents_it_used(platform):
    call = api(platform)
    agent_id = factories.agent(call.actor)
    workflow_id = create(call, config=graph(START, agent_node("helper", agent_id), END))["id"]
    call("DELETE", f"/agents/{agent_id}", 409)
    call("DELETE", f"/workflows/{workflow_id}")
    assert call("DELETE", f"/agents/{agent_id}")["deleted"] is True
