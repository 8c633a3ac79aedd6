"""Solutions over HTTP: one read, accept and reject only once and only in review, the change
refused once the agent's value moved on, the run completed exactly once under concurrent
decisions, one version for twenty concurrent accepts of one solution; and a built-in run with no
endpoint configured, failed at once."""
from __future__ import annotations

import pytest

from models.configs.tables import Version
from models.identity.principal import Principal
from models.kernel.db import database, is_postgres, session
from models.kernel.errors import Conflict
from models.optimization import runs, solutions
from tests.support import factories
from tests.support.client import Api
from tests.support.threads import run_threads

PROMPT = "You book tables at Chez Test."


@pytest.fixture
def world(platform):
    owner = platform.workspace()
    agent = factories.agent(owner, "Booker", config={"prompt": PROMPT})
    feedback = [factories.feedback(owner, f"Feedback {i}", agent_id=agent) for i in range(3)]
    return Api(platform, owner), owner, agent, feedback


def reviewed_run(owner, agent, feedback, proposals=None) -> tuple[str, list[str]]:
    run_id = factories.optimization_run(owner, agent, feedback)
    proposals = proposals or [
        factories.proposal(feedback[:1], title="Cooler", path="/model/temperature", new_value=0.2),
        factories.proposal(feedback[1:2], title="Shorter", path="/firstMessage", new_value="Hi!"),
        factories.proposal(feedback[2:], title="Longer calls", path="/maxDurationSeconds", new_value=900),
    ]
    return run_id, factories.run_solutions(owner, run_id, proposals)


def test_a_builtin_run_with_no_endpoint_configured_fails_at_once(world):
    api, owner, agent, feedback = world
    result = api("POST", "/solutions/runs", json={"agentId": agent})
    assert result["run"]["status"] == "failed" and result["run"]["solutions"] == []
    assert result["run"]["error"].startswith("No language model endpoint is configured (LLM_BASE_URL)")
    # An external optimizer needs no endpoint.
    assert api("POST", "/solutions/runs", json={"agentId": agent, "optimizer": "external"})["run"][
        "status"] == "generating"


def test_a_solution_reads_with_its_change_and_feedback(world, platform):
    api, owner, agent, feedback = world
    run_id, (cooler, *_) = reviewed_run(owner, agent, feedback)
    solution = api("GET", f"/solutions/{cooler}")["solution"]
    assert solution["runId"] == run_id and solution["displayOrder"] == 1
    assert solution["change"]["oldValue"] == 0.7 and solution["change"]["newValue"] == 0.2
    assert "-0.7\n+0.2\n" in solution["change"]["diff"]
    assert solution["decision"] is None and solution["patchDecisions"] == {} and solution["reviewedAt"] is None
    assert [f["title"] for f in solution["feedbacks"]] == ["Feedback 0"]
    theirs = Api(platform, platform.workspace("theirs"))
    theirs("GET", f"/solutions/{cooler}", 404)
    theirs("POST", f"/solutions/{cooler}/accept", 404, json={})
    theirs("POST", f"/solutions/{cooler}/reject", 404, json={})


def test_decisions_are_taken_only_in_review_and_only_once(world):
    api, owner, agent, feedback = world
    run_id = factories.optimization_run(owner, agent, feedback)
    (only,) = factories.run_solutions(owner, run_id, [factories.proposal(feedback[:1])], finish=False)
    message = api("POST", f"/solutions/{only}/accept", 409, json={})["message"]
    assert "is generating" in message
    api("POST", f"/solutions/runs/{run_id}/finish", json={})
    api("POST", f"/solutions/{only}/reject", json={"note": "Not like this."})
    assert "is completed" in api("POST", f"/solutions/{only}/accept", 409, json={})["message"]
    assert "is completed" in api("POST", f"/solutions/{only}/reject", 409, json={})["message"]
    run = api("GET", f"/solutions/runs/{run_id}")["run"]
    assert (run["status"], run["acceptedCount"], run["rejectedCount"]) == ("completed", 0, 1)
    assert api.versions(agent)[0]["versionNumber"] == 1


def test_an_undecided_solution_is_decided_once(world):
    api, owner, agent, feedback = world
    run_id, (cooler, shorter, longer) = reviewed_run(owner, agent, feedback)
    api("POST", f"/solutions/{cooler}/reject", json={})
    assert "rejected already" in api("POST", f"/solutions/{cooler}/accept", 409, json={})["message"]
    api("POST", f"/solutions/{shorter}/accept", json={})
    assert "accepted already" in api("POST", f"/solutions/{shorter}/reject", 409, json={})["message"]
    assert api("GET", f"/solutions/runs/{run_id}")["run"]["status"] == "pendingReview"
    api("POST", f"/solutions/{longer}/accept", json={"note": "Yes."})
    run = api("GET", f"/solutions/runs/{run_id}")["run"]
    assert (run["status"], run["acceptedCount"], run["rejectedCount"]) == ("completed", 2, 1)
    # Each acceptance made a version off the one before: both changes are in the head.
    config = api("GET", f"/agents/{agent}")["agent"]["config"]
    assert (config["firstMessage"], config["maxDurationSeconds"], config["model"]["temperature"]) == ("Hi!", 900, 0.7)


def test_a_change_whose_path_moved_on_is_refused(world):
    api, owner, agent, feedback = world
    _, (cooler, *_) = reviewed_run(owner, agent, feedback)
    api.save(agent, prompt=PROMPT, model={"provider": "openai", "name": "gpt-4o-mini", "temperature": 1.0,
                                          "maxTokens": 1024})
    message = api("POST", f"/solutions/{cooler}/accept", 409, json={})["message"]
    assert message.startswith("The agent's /model/temperature changed since the solution was proposed")
    assert api("GET", f"/solutions/{cooler}")["solution"]["decision"] is None
    api("POST", f"/solutions/{cooler}/reject", json={})


def test_a_note_is_bounded(world):
    api, owner, agent, feedback = world
    _, (cooler, *_) = reviewed_run(owner, agent, feedback)
    api("POST", f"/solutions/{cooler}/accept", 400, json={"note": "x" * 2001})
    assert api("POST", f"/solutions/{cooler}/accept", json={"note": "x" * 2000})["solution"]["patchDecisions"][
        "note"] == "x" * 2000


def _principal(owner) -> Principal:
    return factories.principal(owner)


def _decide(owner, solution_id: str, accept: bool) -> str:
    try:
        with session():
            if accept:
                solutions.accept(_principal(owner), workspace_id=owner.workspace_id, solution_id=solution_id)
            else:
                solutions.reject(_principal(owner), workspace_id=owner.workspace_id, solution_id=solution_id)
        return "ok"
    except Conflict:
        return "conflict"
    finally:
        if not is_postgres():
            database.close()


def test_concurrent_decisions_on_one_run_all_land_and_complete_it_once(world):
    api, owner, agent, feedback = world
    run_id, ids = reviewed_run(owner, agent, feedback)
    results = run_threads(3, lambda i: _decide(owner, ids[i], accept=i != 1))
    assert results == ["ok", "ok", "ok"]
    run = api("GET", f"/solutions/runs/{run_id}")["run"]
    assert (run["status"], run["acceptedCount"], run["rejectedCount"]) == ("completed", 2, 1)
    assert [v["versionNumber"] for v in api.versions(agent)] == [3, 2, 1]


def test_twenty_concurrent_accepts_of_one_solution_make_one_version(world):
    api, owner, agent, feedback = world
    run_id, (cooler, *_) = reviewed_run(owner, agent, feedback)
    results = run_threads(20, lambda i: _decide(owner, cooler, accept=True))
    assert sorted(results) == ["conflict"] * 19 + ["ok"]
    with session():
        assert Version.in_workspace(owner.workspace_id).where(Version.entity_id == agent).count() == 2
        assert runs.get(workspace_id=owner.workspace_id, run_id=run_id).accepted_count == 1
