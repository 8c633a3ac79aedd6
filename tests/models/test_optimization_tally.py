"""The tally of runs by status (optimization_run_tally): exact, equal to a count of the runs,
after creates, every status move (generation's outcomes, an external optimizer's finish, the
last decision), deletes of runs and of a workspace, and twenty creates, decisions and deletes at
once; the unfiltered list reads it, a filtered one counts its own set; an agent's runs at work
are what keeps it (models.entity_users)."""
from __future__ import annotations

import base64
import json

import pytest

from models.identity import workspaces
from models.kernel.db import database, is_postgres, session
from models.optimization import generation, runs, solutions
from models.optimization.tables import OptimizationRun, RunTally
from tests.support import factories
from tests.support.client import Api
from tests.support.threads import run_threads

KEY = "sk-test-tally-key"


@pytest.fixture
def settings_overrides(llm):
    return {"llm_base_url": llm.base_url, "llm_api_key": KEY}


@pytest.fixture
def world(platform):
    owner = platform.workspace()
    agent = factories.agent(owner, "Booker", config={"prompt": "You book tables."})
    feedback = [factories.feedback(owner, f"Feedback {i}", agent_id=agent) for i in range(3)]
    return Api(platform, owner), owner, agent, feedback


def counted(workspace_id: str) -> dict[str, int]:
    """The runs by status, counted."""
    with session():
        return {status: n for status, n in database.execute_sql(
            f"SELECT status, COUNT(*) FROM optimization_run WHERE workspace_id = {database.param} GROUP BY status",
            (workspace_id,)).fetchall()}


def tallied(workspace_id: str) -> dict[str, int]:
    """The runs by status, as the tally holds them (a status whose runs all left holds 0)."""
    with session():
        return {status: n for status, n in RunTally.in_workspace(workspace_id, RunTally.status, RunTally.runs).tuples()
                if n}


def exact(api, workspace_id: str, expected: dict[str, int]) -> None:
    assert tallied(workspace_id) == counted(workspace_id) == expected
    summary = api("GET", "/solutions/runs")["summary"]
    assert summary == {"total": sum(expected.values()), **{s: expected.get(s, 0) for s in runs.STATUSES}}


def test_the_tally_follows_every_create_move_and_delete(world, llm):
    api, owner, agent, feedback = world
    exact(api, owner.workspace_id, {})
    # Built-in runs: one generation stores solutions (pendingReview), one proposes nothing valid
    # (failed), one fails for good in its worker (failed).
    builtin = [api("POST", "/solutions/runs", json={"agentId": agent, "feedbackIds": feedback[:1]})["run"]["id"]
               for _ in range(3)]
    exact(api, owner.workspace_id, {"generating": 3})
    llm.answer({"solutions": [factories.proposal(feedback[:1], path="/firstMessage", new_value="Hi!")]})
    with session():
        job = generation.claim(30)
        assert job.run_id == builtin[0]
        assert generation.complete(job, [factories.proposal(feedback[:1], path="/firstMessage", new_value="Hi!")]) \
            == "pendingReview"
    exact(api, owner.workspace_id, {"generating": 2, "pendingReview": 1})
    with session():
        assert generation.complete(generation.claim(30), [{"title": "no change"}]) == "failed"
        job = generation.claim(30)
        assert generation.fail(job, "down", retry=True) == "generating"  # attempts remain: no move
    exact(api, owner.workspace_id, {"generating": 1, "pendingReview": 1, "failed": 1})
    with session():
        assert generation.fail(job, "down", retry=True) is None  # a stale outcome moves nothing
        assert generation.fail(generation.claim(30, now=job.lease_token), "down", retry=False) == "failed"
    exact(api, owner.workspace_id, {"pendingReview": 1, "failed": 2})

    # External runs: finished with solutions, or with an error; a refused move moves nothing.
    finished = factories.optimization_run(owner, agent, feedback[1:2])
    (solution,) = factories.run_solutions(owner, finished, [factories.proposal(feedback[1:2])])
    failed = factories.optimization_run(owner, agent, feedback[1:2])
    exact(api, owner.workspace_id, {"generating": 1, "pendingReview": 2, "failed": 2})
    api("POST", f"/solutions/runs/{failed}/finish", json={"error": "gave up"})
    api("POST", f"/solutions/runs/{failed}/finish", 409, json={})
    exact(api, owner.workspace_id, {"pendingReview": 2, "failed": 3})

    # The last decision completes its run; a decision refused moves nothing.
    api("POST", f"/solutions/{solution}/reject", json={})
    api("POST", f"/solutions/{solution}/accept", 409, json={})
    exact(api, owner.workspace_id, {"pendingReview": 1, "completed": 1, "failed": 3})

    # Deletes: each run off its status; a run already gone moves nothing.
    api("DELETE", f"/solutions/runs/{finished}")
    api("DELETE", f"/solutions/runs/{finished}", 404)
    api("DELETE", f"/solutions/runs/{builtin[0]}")
    exact(api, owner.workspace_id, {"failed": 3})

    # Another workspace's runs are its own tally; the workspace's deletion takes its tally with it.
    other = factories.workspace("other")
    other_agent = factories.agent(other, "Greeter")
    factories.optimization_run(other, other_agent, [factories.feedback(other, "Slow", agent_id=other_agent)])
    assert tallied(other.workspace_id) == counted(other.workspace_id) == {"generating": 1}
    assert tallied(owner.workspace_id) == {"failed": 3}
    with session():
        workspaces.delete(factories.principal(other), workspace_id=other.workspace_id, confirm_name="other")
        assert not list(RunTally.in_workspace(other.workspace_id, RunTally.runs).tuples())


def _at_once(index: int, owner, agent: str, feedback: list[str], to_reject: list[str], to_delete: list[str]):
    try:
        with session():
            if index < len(to_reject):
                solutions.reject(factories.principal(owner), workspace_id=owner.workspace_id,
                                 solution_id=to_reject[index])
            elif index < len(to_reject) + len(to_delete):
                runs.delete(workspace_id=owner.workspace_id, run_id=to_delete[index - len(to_reject)])
            else:
                runs.create(factories.principal(owner), workspace_id=owner.workspace_id, agent_id=agent,
                            feedback_ids=feedback[:1], optimizer="external")
        return "ok"
    finally:
        if not is_postgres():
            database.close()


def test_twenty_creates_decisions_and_deletes_at_once_keep_the_tally_exact(world):
    api, owner, agent, feedback = world
    reviewed = [factories.optimization_run(owner, agent, feedback[:1]) for _ in range(12)]
    to_reject = [factories.run_solutions(owner, run_id, [factories.proposal(feedback[:1])])[0]
                 for run_id in reviewed[:8]]
    for run_id in reviewed[8:]:
        factories.run_solutions(owner, run_id, [factories.proposal(feedback[:1])])
    exact(api, owner.workspace_id, {"pendingReview": 12})
    # 8 decisions that complete their run, 4 deletes of runs in review, 8 creates: the same rows
    # of the tally moved by twenty transactions at once.
    results = run_threads(20, lambda i: _at_once(i, owner, agent, feedback, to_reject, reviewed[8:]))
    assert results == ["ok"] * 20
    exact(api, owner.workspace_id, {"generating": 8, "completed": 8})


def test_the_unfiltered_list_reads_the_tally_and_a_filtered_one_counts(world):
    api, owner, agent, feedback = world
    kept = factories.optimization_run(owner, agent, feedback[:1])
    factories.optimization_run(owner, agent, feedback[:1])
    # A tally made wrong on purpose shows in the unfiltered summary only: that one reads it.
    with session():
        runs.tally(owner.workspace_id, {"failed": 5})
    assert api("GET", "/solutions/runs")["summary"]["failed"] == 5
    assert api("GET", "/solutions/runs")["pagination"]["total"] == 7
    state = encoded({"status": ["generating", "pendingReview", "completed", "failed"]})
    filtered = api("GET", "/solutions/runs", filters=state)
    assert filtered["summary"]["failed"] == 0 and filtered["pagination"]["total"] == 2
    searched = api("GET", "/solutions/runs", search="booker")
    assert searched["pagination"]["total"] == 2 and {r["id"] for r in searched["runs"]} >= {kept}


def encoded(state: dict) -> str:
    return base64.b64encode(json.dumps(state).encode()).decode()


def test_the_runs_that_keep_an_agent_are_at_most_eleven(world):
    api, owner, agent, feedback = world
    ids = [factories.optimization_run(owner, agent, feedback[:1]) for _ in range(12)]
    with session():
        OptimizationRun.update(status="completed").where(OptimizationRun.id == ids[0]).execute()
        users = runs.users_of("agent", owner.workspace_id, agent)
        assert len(users) == 11 and users[0] == f"the optimization run {ids[1]} (generating)"
        assert runs.users_of("workflow", owner.workspace_id, agent) == []
    assert "and 1 more" in api("DELETE", f"/agents/{agent}", 409)["message"]
