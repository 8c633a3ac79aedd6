"""Versions over HTTP: the list (numbering, order, pagination, shape), configDiffSummary, get,
diff, publish, restore, and who may do which."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise

from tests.support import factories
from tests.support.client import Api, api
from tests.support.times import recent

VERSION_FIELDS = {"id", "entityType", "entityId", "workspaceId", "versionNumber", "parentVersionId", "isPublished",
                  "createdBy", "createdAt", "configDiffSummary", "publishedAt", "publishedBy", "name", "branchId",
                  "closedFeedbacks"}
DEFAULT_PROMPT = "You are a helpful voice assistant."


def tool(name: str) -> dict:
    return {"name": name, "description": f"Calls {name}."}


# --- the list --------------------------------------------------------------------------------

def test_numbers_run_from_1_without_gaps_across_the_main_line_and_branches(platform):
    call = api(platform)
    agent = call.create()
    agent_id, first = agent["id"], agent["headVersionId"]
    call.save(agent_id, prompt="Main two")                                           # 2
    branch = call("POST", f"/branches/agent/{agent_id}", json={"name": "b", "baseVersionId": first})["branch"]
    commit = f"/branches/agent/{agent_id}/{branch['id']}/commits"
    call("POST", commit, json={"config": {"firstMessage": "Branch three"}})          # 3
    call("PATCH", f"/agents/{agent_id}", 400, json={"config": {"language": "?"}})     # refused: no number
    call.save(agent_id, prompt="Main four")                                           # 4
    call("POST", commit, json={"config": {"firstMessage": "Branch five"}})           # 5
    call("POST", f"/versions/agent/{agent_id}/{first}/restore")                      # 6
    call("POST", f"/branches/agent/{agent_id}/{branch['id']}/merge")                 # 7
    versions = call.versions(agent_id)
    assert [v["versionNumber"] for v in versions] == [7, 6, 5, 4, 3, 2, 1]
    assert len({v["id"] for v in versions}) == 7
    assert [v["versionNumber"] for v in versions if v["branchId"] == branch["id"]] == [5, 3]


def test_concurrent_saves_and_commits_get_consecutive_numbers_and_linear_lines(platform):
    call = api(platform)
    agent = call.create()
    branch = call("POST", f"/branches/agent/{agent['id']}", json={"name": "b", "baseVersionId": agent["headVersionId"]})
    commit = f"/branches/agent/{agent['id']}/{branch['branch']['id']}/commits"

    def save(i: int) -> None:
        if i % 2:
            call("POST", commit, json={"config": {"prompt": f"Branch {i}"}})
        else:
            call.save(agent["id"], prompt=f"Main {i}")

    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(save, range(18)))
    versions = call.versions(agent["id"], limit=100)[::-1]
    assert [v["versionNumber"] for v in versions] == list(range(1, 20))
    # Each line is a chain: every version the child of the one before it on its line.
    main = [versions[0]] + [v for v in versions if v["branchId"] is None][1:]
    on_branch = [versions[0]] + [v for v in versions if v["branchId"]]
    for line in (main, on_branch):
        assert len(line) == 10
        assert all(v["parentVersionId"] == before["id"] for before, v in pairwise(line))
    assert call("GET", f"/agents/{agent['id']}")["agent"]["headVersionId"] == main[-1]["id"]


def test_the_list_is_newest_first_with_limit_and_offset_at_their_bounds(platform):
    call = api(platform)
    agent_id = call.create()["id"]
    factories.save_versions(call.actor, agent_id, 4)
    path = f"/versions/agent/{agent_id}"
    page = call("GET", path)
    assert set(page) == {"versions", "total", "limit", "offset", "openBranches", "pagination"}
    assert [v["versionNumber"] for v in page["versions"]] == [5, 4, 3, 2, 1]
    assert (page["total"], page["limit"], page["offset"], page["openBranches"]) == (5, 20, 0, [])
    assert page["pagination"] == {"total": 5, "limit": 20, "offset": 0}
    page = call("GET", path, limit=2, offset=1)
    assert [v["versionNumber"] for v in page["versions"]] == [4, 3] and page["total"] == 5
    assert [v["versionNumber"] for v in call.versions(agent_id, limit=100, offset=4)] == [1]
    for offset in (5, 1000):
        page = call("GET", path, offset=offset)
        assert page["versions"] == [] and page["total"] == 5 and page["pagination"]["total"] == 5
    for params, name in (({"limit": 101}, "limit"), ({"limit": 0}, "limit"), ({"offset": -1}, "offset")):
        assert name in call("GET", path, 400, **params)["message"]


def test_each_version_has_every_field_of_the_spec(platform):
    call = api(platform)
    agent = call.create()
    second = call.save(agent["id"], prompt="Be brief.")
    listed = call.versions(agent["id"])
    assert listed[0] == second
    for version in listed:
        assert set(version) == VERSION_FIELDS
        assert version["entityType"] == "agent" and version["entityId"] == agent["id"]
        assert version["workspaceId"] == call.actor.workspace_id and version["createdBy"] == call.actor.user_id
        assert recent(version["createdAt"]) and version["closedFeedbacks"] == [] and version["branchId"] is None
    assert second["parentVersionId"] == agent["headVersionId"] and second["name"]
    assert second["configDiffSummary"] == [{"section": "prompt", "count": 1}]
    assert (second["isPublished"], second["publishedAt"], second["publishedBy"]) == (False, None, None)


def test_entity_type_must_be_agent_or_workflow(platform):
    call = api(platform)
    agent = call.create()
    for path in (f"/versions/persona/{agent['id']}", f"/versions/persona/{agent['id']}/{agent['headVersionId']}"):
        assert "entityType" in call("GET", path, 400)["message"]


def test_versions_of_another_workspace_or_another_kind_are_not_found(platform):
    ours, theirs = api(platform), api(platform)
    their_agent, our_agent = theirs.create(), ours.create()
    workflow = ours("POST", "/workflows", json={"name": "Triage"})["workflow"]

    def not_found(entity_path: str, version_id: str) -> None:
        for method, suffix in (("GET", ""), ("GET", "/diff"), ("POST", "/publish"), ("POST", "/restore")):
            ours(method, f"{entity_path}/{version_id}{suffix}", 404)

    for entity_path, entity in ((f"/versions/agent/{their_agent['id']}", their_agent),
                                (f"/versions/agent/{workflow['id']}", workflow),
                                (f"/versions/workflow/{our_agent['id']}", our_agent)):
        assert entity["id"] in ours("GET", entity_path, 404)["message"]
        not_found(entity_path, entity["headVersionId"])
    # A version of another entity, under this one.
    not_found(f"/versions/agent/{our_agent['id']}", workflow["headVersionId"])
    assert len(theirs.versions(their_agent["id"])) == 1 and len(ours.versions(our_agent["id"])) == 1


# --- configDiffSummary and diff --------------------------------------------------------------

def test_config_diff_summary_counts_the_leaves_changed_per_section(platform):
    call = api(platform)
    agent_id = call.create(config={"endCallPhrases": ["bye", "goodbye"]})["id"]
    nested = call.save(agent_id, endCallPhrases=["bye", "goodbye"],
                       model={"provider": "openai", "name": "gpt-4o", "temperature": 0.2, "maxTokens": 1024})
    assert nested["configDiffSummary"] == [{"section": "model", "count": 2}]
    two_tools = call.save(agent_id, endCallPhrases=["bye", "goodbye"], tools=[tool("a"), tool("b")])
    assert two_tools["configDiffSummary"] == [{"section": "model", "count": 2}, {"section": "tools", "count": 4}]
    one_phrase = call.save(agent_id, endCallPhrases=["bye"], tools=[tool("a"), tool("b")])
    assert one_phrase["configDiffSummary"] == [{"section": "endCallPhrases", "count": 1}]
    assert [v["configDiffSummary"] for v in call.versions(agent_id)[:3]] == [
        one_phrase["configDiffSummary"], two_tools["configDiffSummary"], nested["configDiffSummary"]]


def test_each_summary_is_the_summary_of_the_diff_against_the_parent(platform):
    call = api(platform)
    agent_id = call.create(config={"tools": [tool("a")]})["id"]
    call.save(agent_id, tools=[tool("a"), tool("b")], metadata={"team": "billing"})
    call.save(agent_id, language="de-DE")
    for version in call.versions(agent_id):
        diff = call("GET", f"/versions/agent/{agent_id}/{version['id']}/diff")
        assert diff["summary"] == version["configDiffSummary"], version["versionNumber"]
        assert diff["fromVersionId"] == version["parentVersionId"]


def test_get_returns_the_version_with_its_configuration(platform):
    call = api(platform)
    agent = call.create(config={"firstMessage": "Hi!"})
    call.save(agent["id"], prompt="Be brief.")
    version = call("GET", f"/versions/agent/{agent['id']}/{agent['headVersionId']}")["version"]
    assert version["config"] == agent["config"] and version["versionNumber"] == 1
    assert set(version) == VERSION_FIELDS | {"config"}


def test_diff_against_the_parent_or_another_version(platform):
    call = api(platform)
    agent = call.create()
    agent_id, first = agent["id"], agent["headVersionId"]
    second = call.save(agent_id, prompt="Be brief.")
    third = call.save(agent_id, prompt="Be brief.", tools=[tool("a")])
    diff = call("GET", f"/versions/agent/{agent_id}/{third['id']}/diff")
    assert (diff["fromVersionId"], diff["fromVersionNumber"]) == (second["id"], 2)
    assert (diff["toVersionId"], diff["toVersionNumber"]) == (third["id"], 3)
    assert diff["changes"] == [{"op": "add", "path": "/tools/0", "newValue": tool("a")}]
    assert diff["summary"] == [{"section": "tools", "count": 2}]
    diff = call("GET", f"/versions/agent/{agent_id}/{third['id']}/diff", against=first)
    assert diff["fromVersionNumber"] == 1 and diff["changes"] == [
        {"op": "replace", "path": "/prompt", "oldValue": DEFAULT_PROMPT, "newValue": "Be brief."},
        {"op": "add", "path": "/tools/0", "newValue": tool("a")}]
    backwards = call("GET", f"/versions/agent/{agent_id}/{first}/diff", against=third["id"])
    assert [c["op"] for c in backwards["changes"]] == ["replace", "remove"]
    assert "newValue" not in backwards["changes"][1]
    first_diff = call("GET", f"/versions/agent/{agent_id}/{first}/diff")
    assert first_diff["fromVersionId"] is None and first_diff["fromVersionNumber"] is None
    assert {c["op"] for c in first_diff["changes"]} == {"add"} and len(first_diff["changes"]) == 9


def test_diff_against_a_version_of_another_entity_is_refused(platform):
    call = api(platform)
    agent, other = call.create(), call.create()
    for against in (other["headVersionId"], "5f0c6a7e-0000-4000-8000-000000000000"):
        message = call("GET", f"/versions/agent/{agent['id']}/{agent['headVersionId']}/diff", 400,
                       against=against)["message"]
        assert "against" in message and against in message


# --- publish and restore ---------------------------------------------------------------------

def test_publishing_a_version_unpublishes_the_one_before_and_makes_it_live(platform):
    call = api(platform)
    agent_id = call.create()["id"]
    call.save(agent_id, prompt="Two")
    third = call.save(agent_id, prompt="Three")
    fourth = call.save(agent_id, prompt="Four")
    published = call("POST", f"/versions/agent/{agent_id}/{third['id']}/publish")["version"]
    assert published["isPublished"] is True and published["publishedBy"] == call.actor.user_id
    assert recent(published["publishedAt"])
    assert [v["versionNumber"] for v in call.versions(agent_id) if v["isPublished"]] == [3]
    agent = call("GET", f"/agents/{agent_id}")["agent"]
    assert agent["liveConfig"]["prompt"] == "Three" and agent["publishedVersionId"] == third["id"]
    assert agent["publishedVersionNumber"] == 3
    assert agent["config"]["prompt"] == "Four" and agent["headVersionId"] == fourth["id"]
    # Publishing the published version again changes nothing.
    assert call("POST", f"/versions/agent/{agent_id}/{third['id']}/publish")["version"] == published
    assert [v["versionNumber"] for v in call.versions(agent_id) if v["isPublished"]] == [3]


def test_restore_makes_a_new_unpublished_head_with_the_old_configuration(platform):
    call = api(platform)
    agent = call.create(config={"firstMessage": "Hi!"})
    agent_id, first = agent["id"], agent["headVersionId"]
    call.save(agent_id, prompt="Two")
    third = call.save(agent_id, prompt="Three", tools=[tool("a")])
    restored = call("POST", f"/versions/agent/{agent_id}/{first}/restore")["version"]
    assert restored["versionNumber"] == 4 and restored["parentVersionId"] == third["id"]
    assert restored["name"] == "Restored from version 1" and restored["isPublished"] is False
    assert restored["configDiffSummary"] == [{"section": "firstMessage", "count": 1}, {"section": "prompt", "count": 1},
                                             {"section": "tools", "count": 2}]
    after = call("GET", f"/agents/{agent_id}")["agent"]
    assert after["config"] == agent["config"] and after["headVersionId"] == restored["id"]
    assert after["publishedVersionId"] == first
    named = call("POST", f"/versions/agent/{agent_id}/{third['id']}/restore", json={"name": "Back to three"})["version"]
    assert named["versionNumber"] == 5 and named["name"] == "Back to three"


def test_publishing_a_workflow_version_that_names_a_deleted_agent_is_refused(platform):
    # Restoring that version is refused (the agent is gone); publishing it must be too, or the
    # live configuration would route calls to an agent that no longer exists.
    call = api(platform)
    agent_id = call.create()["id"]
    nodes = [{"id": "start", "type": "start"}, {"id": "helper", "type": "agent", "agentId": agent_id},
             {"id": "end", "type": "end"}]
    workflow = call("POST", "/workflows", json={"name": "Triage", "config": {"nodes": nodes}})["workflow"]
    without = call("PATCH", f"/workflows/{workflow['id']}", json={"config": {}})["version"]
    call("POST", f"/versions/workflow/{workflow['id']}/{without['id']}/publish")
    call("DELETE", f"/agents/{agent_id}")
    for action in ("restore", "publish"):
        refused = call("POST", f"/versions/workflow/{workflow['id']}/{workflow['headVersionId']}/{action}", 409)
        assert agent_id in refused["message"] and f"cannot be {action}" in refused["message"]
    assert call("GET", f"/workflows/{workflow['id']}")["workflow"]["publishedVersionId"] == without["id"]


# --- who may --------------------------------------------------------------------------------

def test_a_viewer_reads_versions_but_neither_publishes_nor_restores(platform):
    owner = api(platform)
    viewer = Api(platform, platform.member(owner.actor, "viewer"))
    agent = owner.create()
    version = f"/versions/agent/{agent['id']}/{agent['headVersionId']}"
    assert len(viewer.versions(agent["id"])) == 1
    viewer("GET", version)
    viewer("GET", version + "/diff")
    assert "versions:publish" in viewer("POST", version + "/publish", 403)["message"]
    assert "agents:write" in viewer("POST", version + "/restore", 403)["message"]
    assert len(owner.versions(agent["id"])) == 1


def test_a_member_restores_and_publishes(platform):
    owner = api(platform)
    member = Api(platform, platform.member(owner.actor, "member"))
    agent = owner.create()
    restored = member("POST", f"/versions/agent/{agent['id']}/{agent['headVersionId']}/restore")["version"]
    assert restored["versionNumber"] == 2 and restored["createdBy"] == member.actor.user_id
    published = member("POST", f"/versions/agent/{agent['id']}/{restored['id']}/publish")["version"]
    assert published["publishedBy"] == member.actor.user_id


def test_restore_needs_the_write_permission_of_the_entitys_kind(platform):
    owner = api(platform)
    agent = owner.create()
    workflow = owner("POST", "/workflows", json={"name": "Triage"})["workflow"]
    key = Api(platform, factories.api_key(owner.actor, permissions=["agents:write", "versions:read"]))
    key("POST", f"/versions/agent/{agent['id']}/{agent['headVersionId']}/restore")
    message = key("POST", f"/versions/workflow/{workflow['id']}/{workflow['headVersionId']}/restore", 403)["message"]
    assert "workflows:write" in message
