"""Branches over HTTP: create from a version, commit, merge (clean, conflicting, resolved, invalid),
close, list, the legal status moves, and who may do which."""
from __future__ import annotations

import copy

import pytest

from tests.support.client import Api, api
from tests.support.times import recent

DEFAULT_PROMPT = "You are a helpful voice assistant."
DEFAULT_MODEL = {"provider": "openai", "name": "gpt-4o-mini", "temperature": 0.7, "maxTokens": 1024}


class Entity:
    """An agent (or workflow) of ``call``'s workspace and its branches, by their paths."""

    def __init__(self, call: Api, kind: str = "agent", **config):
        self.call, self.kind = call, kind
        created = call("POST", f"/{kind}s", json={"name": f"The {kind}", "config": config})[kind]
        self.id, self.first = created["id"], created["headVersionId"]

    def seen_by(self, call: Api) -> Entity:
        """The same entity, requested by another caller."""
        view = copy.copy(self)
        view.call = call
        return view

    def get(self) -> dict:
        return self.call("GET", f"/{self.kind}s/{self.id}")[self.kind]

    def save(self, **config) -> dict:
        """A new main-line version holding ``config`` (the rest at defaults)."""
        return self.call("PATCH", f"/{self.kind}s/{self.id}", json={"config": config})["version"]

    def versions(self) -> dict:
        return self.call("GET", f"/versions/{self.kind}/{self.id}", limit=100)

    def branch(self, name: str = "Experiment", base: str | None = None, expect: int = 200):
        result = self.call("POST", f"/branches/{self.kind}/{self.id}", expect,
                           json={"name": name, "baseVersionId": base or self.first})
        return result["branch"] if expect == 200 else result

    def branches(self, expect: int = 200, **params) -> dict:
        return self.call("GET", f"/branches/{self.kind}/{self.id}", expect, **params)

    def commit(self, branch: dict, expect: int = 200, **config):
        return self.call("POST", f"/branches/{self.kind}/{self.id}/{branch['id']}/commits", expect,
                         json={"config": config})

    def merge(self, branch: dict, expect: int = 200, **body):
        return self.call("POST", f"/branches/{self.kind}/{self.id}/{branch['id']}/merge", expect, json=body or None)

    def close(self, branch: dict, expect: int = 200):
        return self.call("POST", f"/branches/{self.kind}/{self.id}/{branch['id']}/close", expect)


def agent(platform, **config) -> Entity:
    return Entity(api(platform), **config)


def conflicting_prompts(platform) -> tuple[Entity, dict]:
    """An agent whose main line and open branch both changed the prompt since the branch's base;
    the branch also changed the first message, the main line the language."""
    entity = agent(platform)
    branch = entity.branch()
    entity.save(prompt="Main prompt.", language="de")
    entity.commit(branch, prompt="Branch prompt.", firstMessage="Hey!")
    return entity, branch


# --- create and commit -----------------------------------------------------------------------

def test_a_new_branch_starts_at_its_base_version_with_no_commits(platform):
    entity = agent(platform)
    second = entity.save(prompt="Two")
    branch = entity.branch("Friendlier tone", base=entity.first)
    assert branch["status"] == "open" and branch["name"] == "Friendlier tone" and branch["commitCount"] == 0
    assert branch["baseVersionId"] == branch["headVersionId"] == entity.first
    assert branch["baseVersionNumber"] == branch["headVersionNumber"] == 1
    assert (branch["entityType"], branch["entityId"], branch["workspaceId"]) == (
        "agent", entity.id, entity.call.actor.workspace_id)
    assert branch["mergedVersionId"] is None and branch["createdBy"] == entity.call.actor.user_id
    assert entity.call("GET", f"/branches/agent/{entity.id}/{branch['id']}")["branch"] == branch
    # Every documented field of an open branch.
    assert {"id", "baseVersionId", "headVersionId", "createdBy", "name", "status", "commitCount",
            "baseVersionNumber", "headVersionNumber", "createdAt", "updatedAt"} <= set(branch)
    assert recent(branch["createdAt"]) and branch["updatedAt"] == branch["createdAt"]
    listed = entity.versions()
    assert listed["openBranches"] == [branch] and listed["total"] == 2
    assert entity.get()["headVersionId"] == second["id"]


def test_the_base_must_be_a_version_of_the_entity(platform):
    entity = agent(platform)
    other = Entity(entity.call)
    for base in (other.first, "5f0c6a7e-0000-4000-8000-000000000000"):
        message = entity.branch(base=base, expect=400)["message"]
        assert "baseVersionId" in message and base in message
    assert "name" in entity.branch(name="", expect=400)["message"]
    assert "name" in entity.branch(name="x" * 101, expect=400)["message"]
    assert entity.branch(name="x" * 100)["name"] == "x" * 100
    assert entity.branches()["pagination"]["total"] == 1


def test_commits_advance_the_branch_and_not_the_main_line(platform):
    entity = agent(platform)
    branch = entity.branch()
    first = entity.commit(branch, prompt="Branch one.")
    second = entity.commit(branch, prompt="Branch two.")
    assert first["version"]["branchId"] == second["version"]["branchId"] == branch["id"]
    assert first["version"]["parentVersionId"] == entity.first
    assert second["version"]["parentVersionId"] == first["version"]["id"]
    assert second["branch"]["headVersionId"] == second["version"]["id"] and second["branch"]["commitCount"] == 2
    assert second["version"]["isPublished"] is False
    main = entity.get()
    assert main["headVersionId"] == entity.first and main["config"]["prompt"] == DEFAULT_PROMPT
    [listed] = entity.versions()["openBranches"]
    assert (listed["baseVersionNumber"], listed["headVersionNumber"], listed["commitCount"]) == (1, 3, 2)


def test_a_commit_is_validated_as_the_entitys_configuration(platform):
    workflow = Entity(api(platform), "workflow")
    message = workflow.commit(workflow.branch(), 400, nodes=[{"id": "start", "type": "start"}],
                              edges=[{"from": "start", "to": "gone"}])["message"]
    assert "config.edges[0].to" in message and "'gone'" in message
    assert workflow.versions()["total"] == 1
    entity = Entity(workflow.call)
    branch = entity.branch()
    assert "nodes" in entity.commit(branch, 400, nodes=[{"id": "start", "type": "start"}])["message"]
    model = {**DEFAULT_MODEL, "temperature": 2.1}
    assert "config.model.temperature" in entity.commit(branch, 400, model=model)["message"]
    assert entity.versions()["openBranches"][0]["commitCount"] == 0


# --- merge -----------------------------------------------------------------------------------

def test_a_merge_without_conflicts_joins_both_lines_in_a_new_main_line_version(platform):
    entity = agent(platform)
    branch = entity.branch()
    main = entity.save(firstMessage="Hi!", model={**DEFAULT_MODEL, "temperature": 0.2})
    entity.commit(branch, prompt="Be brief.", model={**DEFAULT_MODEL, "name": "gpt-4o"})
    result = entity.merge(branch)
    version, merged = result["version"], result["branch"]
    assert version["versionNumber"] == 4 and version["parentVersionId"] == main["id"]
    assert version["branchId"] is None and version["isPublished"] is False
    assert version["configDiffSummary"] == [{"section": "model", "count": 1}, {"section": "prompt", "count": 1}]
    assert merged["status"] == "merged" and merged["mergedVersionId"] == version["id"]
    after = entity.get()
    assert after["headVersionId"] == version["id"] and after["publishedVersionId"] == entity.first
    config = after["config"]
    assert (config["prompt"], config["firstMessage"]) == ("Be brief.", "Hi!")
    assert config["model"] == {**DEFAULT_MODEL, "temperature": 0.2, "name": "gpt-4o"}
    assert entity.versions()["openBranches"] == []


def test_a_merge_where_both_lines_changed_a_path_is_refused_listing_the_conflict(platform):
    entity, branch = conflicting_prompts(platform)
    error = entity.merge(branch, 409)
    assert error["result"] == {"conflicts": [{"path": "/prompt", "baseValue": DEFAULT_PROMPT,
                                              "mainValue": "Main prompt.", "branchValue": "Branch prompt."}]}
    assert "/prompt" in error["message"]
    listed = entity.versions()
    assert listed["total"] == 3 and listed["openBranches"][0]["status"] == "open"
    assert entity.get()["config"]["prompt"] == "Main prompt."


@pytest.mark.parametrize("side, prompt", [("branch", "Branch prompt."), ("main", "Main prompt.")])
def test_a_conflict_is_settled_by_a_resolution(platform, side, prompt):
    entity, branch = conflicting_prompts(platform)
    result = entity.merge(branch, resolutions={"/prompt": side}, name="Settled")
    assert result["branch"]["status"] == "merged" and result["version"]["name"] == "Settled"
    config = entity.get()["config"]
    # The chosen side at the conflict; both lines' other changes either way.
    assert (config["prompt"], config["firstMessage"], config["language"]) == (prompt, "Hey!", "de")


def test_a_resolution_must_settle_a_conflict_and_name_a_side(platform):
    entity, branch = conflicting_prompts(platform)
    assert "resolutions" in entity.merge(branch, 400, resolutions={"/prompt": "theirs"})["message"]
    message = entity.merge(branch, 400, resolutions={"/prompt": "branch", "/firstMessage": "main"})["message"]
    assert "resolutions" in message and "/firstMessage" in message
    assert entity.versions()["openBranches"][0]["id"] == branch["id"]


def test_a_branch_without_commits_cannot_be_merged(platform):
    entity = agent(platform)
    branch = entity.branch("Empty")
    error = entity.merge(branch, 409)
    assert "no commits" in error["message"] and error["result"] is None
    assert entity.versions()["openBranches"][0]["status"] == "open"


def test_a_workflow_merge_whose_result_breaks_the_graph_is_refused_naming_the_problem(platform):
    nodes = [{"id": "start", "type": "start"}, {"id": "mid", "type": "end"}, {"id": "end", "type": "end"}]
    edges = [{"from": "start", "to": "mid"}, {"from": "start", "to": "end"}]
    workflow = Entity(api(platform), "workflow", nodes=nodes, edges=edges)
    branch = workflow.branch("Drop mid")
    workflow.commit(branch, nodes=[nodes[0], nodes[2]], edges=[edges[1]])
    workflow.save(nodes=nodes, edges=edges + [{"from": "mid", "to": "end"}])
    message = workflow.merge(branch, 409)["message"]
    assert "not valid" in message and "'mid'" in message and "edges" in message
    listed = workflow.versions()
    assert listed["total"] == 3 and listed["openBranches"][0]["status"] == "open"


# --- status moves, close, list ---------------------------------------------------------------

def test_only_an_open_branch_takes_commits_merges_or_closes(platform):
    entity = agent(platform)
    merged, closed = entity.branch("Merged"), entity.branch("Closed")
    entity.commit(merged, prompt="Merged.")
    entity.merge(merged)
    entity.close(closed)
    for branch, status in ((merged, "merged"), (closed, "closed")):
        for message in (entity.commit(branch, 409, prompt="Late.")["message"], entity.merge(branch, 409)["message"],
                        entity.close(branch, 409)["message"]):
            assert status in message and "only an open branch" in message
    assert entity.versions()["total"] == 3


def test_a_closed_branch_leaves_the_open_branches_and_keeps_its_versions(platform):
    entity = agent(platform)
    kept, closing = entity.branch("Kept"), entity.branch("Closing")
    entity.commit(closing, prompt="Tried.")
    closed = entity.close(closing)["branch"]
    assert closed["status"] == "closed" and closed["mergedVersionId"] is None and closed["commitCount"] == 1
    listed = entity.versions()
    assert [b["id"] for b in listed["openBranches"]] == [kept["id"]]
    assert listed["versions"][0]["branchId"] == closing["id"]
    assert entity.get()["headVersionId"] == entity.first


def test_the_branch_list_filters_by_status_and_pages(platform):
    entity = agent(platform)
    names = ["one", "two", "three", "four"]
    made = {name: entity.branch(name) for name in names}
    entity.commit(made["two"], prompt="Two.")
    entity.merge(made["two"])
    entity.close(made["three"])
    page = entity.branches()
    assert [b["name"] for b in page["branches"]] == names[::-1]
    assert page["pagination"] == {"total": 4, "limit": 20, "offset": 0}
    for status, expected in (("open", ["four", "one"]), ("merged", ["two"]), ("closed", ["three"])):
        page = entity.branches(status=status)
        assert [b["name"] for b in page["branches"]] == expected and page["pagination"]["total"] == len(expected)
    page = entity.branches(limit=1, offset=1)
    assert [b["name"] for b in page["branches"]] == ["three"] and page["pagination"]["total"] == 4
    page = entity.branches(status="open", offset=2)
    assert page["branches"] == [] and page["pagination"]["total"] == 2
    assert entity.branches(limit=100)["pagination"]["limit"] == 100
    for params, name in (({"status": "abandoned"}, "status"), ({"limit": 101}, "limit"), ({"offset": -1}, "offset")):
        assert name in entity.call("GET", f"/branches/agent/{entity.id}", 400, **params)["message"]
    assert "entityType" in entity.call("GET", f"/branches/persona/{entity.id}", 400)["message"]


# --- scope and permissions -------------------------------------------------------------------

def test_branches_of_another_workspace_are_not_found(platform):
    theirs = agent(platform)
    their_branch = theirs.branch()
    ours = Entity(api(platform))
    intruder = theirs.seen_by(ours.call)  # their agent's paths, requested by us
    intruder.branch(expect=404)
    intruder.branches(expect=404)
    intruder.call("GET", f"/branches/agent/{theirs.id}/{their_branch['id']}", 404)
    intruder.commit(their_branch, 404, prompt="Mine.")
    intruder.merge(their_branch, 404)
    intruder.close(their_branch, 404)
    # Our own agent with their branch's id, and under the workflow paths.
    ours.call("GET", f"/branches/agent/{ours.id}/{their_branch['id']}", 404)
    ours.close(their_branch, 404)
    ours.call("POST", f"/branches/workflow/{ours.id}", 404, json={"name": "b", "baseVersionId": ours.first})
    assert theirs.branches(status="open")["pagination"]["total"] == 1
    assert theirs.versions()["total"] == 1


def test_a_viewer_lists_branches_but_changes_none(platform):
    entity = agent(platform)
    branch = entity.branch()
    viewer = entity.seen_by(Api(platform, platform.member(entity.call.actor, "viewer")))
    assert viewer.branches()["pagination"]["total"] == 1
    for error in (viewer.branch(expect=403), viewer.commit(branch, 403, prompt="No."), viewer.merge(branch, 403),
                  viewer.close(branch, 403)):
        assert "agents:write" in error["message"]
    assert entity.branches(status="open")["pagination"]["total"] == 1
