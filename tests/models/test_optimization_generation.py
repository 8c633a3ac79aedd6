"""The generation of runs as leased work, against a local chat-completions server: an endpoint
down, refusing the key, too slow or answering garbage fails the attempt, retried until
MAX_ATTEMPTS and then failed with a clear error, never with invented solutions; a run whose worker
died is taken again once its lease runs out, and failed once it has had its attempts; a late
outcome changes nothing; the lease is renewed while the endpoint thinks; an external run past its
deadline fails; the worker threads of the app do all of it on their own. And the change of a
solution: JSON pointers, diffs, the schema's word."""
from __future__ import annotations

import socket
import time
from datetime import timedelta

import pytest

from models.kernel import chat_completions
from models.kernel.db import session, utcnow
from models.kernel.errors import InvalidInput
from models.optimization import changes, generation, runs
from models.optimization.tables import OptimizationRun
from tests.support import factories
from tests.support.client import Api

KEY = "sk-test-generation-key"


@pytest.fixture
def settings_overrides(request, llm):
    # No worker thread in the app unless a test asks (its claims would race the test's own).
    return {"llm_base_url": llm.base_url, "llm_api_key": KEY, **getattr(request, "param", {})}


@pytest.fixture
def world(platform):
    owner = platform.workspace()
    agent = factories.agent(owner, "Booker", config={"prompt": "You book tables."})
    feedback = factories.feedback(owner, "Too chatty", agent_id=agent)
    return Api(platform, owner), owner, agent, feedback


def start(api, agent) -> str:
    return api("POST", "/solutions/runs", json={"agentId": agent})["run"]["id"]


def row(owner, run_id) -> OptimizationRun:
    with session():
        return OptimizationRun.in_workspace(owner.workspace_id).where(OptimizationRun.id == run_id).get()


def generate(base_url: str, **settings) -> int:
    # wait_s: a failed attempt is due again after a fraction of the (short) lease.
    return factories.generate(llm_base_url=base_url, llm_api_key=KEY, wait_s=0.6, **settings)


def valid(feedback) -> dict:
    return {"solutions": [factories.proposal([feedback], title="Cooler", path="/model/temperature", new_value=0.2)]}


def test_an_endpoint_that_cannot_be_reached_fails_the_run_after_its_attempts(world):
    api, owner, agent, _ = world
    run_id = start(api, agent)
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        nowhere = f"http://127.0.0.1:{free.getsockname()[1]}/v1"
    # The platform's endpoint (LLM_BASE_URL), which the worker resolves for a workspace without its own.
    chat_completions.configure(chat_completions.Endpoint(nowhere, KEY, "gpt-4o-mini", 60.0))
    assert generate(nowhere) == generation.MAX_ATTEMPTS
    run = row(owner, run_id)
    assert (run.status, run.attempts, run.solution_count) == ("failed", 3, 0)
    assert run.error == f"Generation failed after 3 attempts: The language model endpoint {nowhere} could not be reached."


def test_a_refused_key_fails_the_run_at_once_without_the_key(world, llm):
    api, owner, agent, _ = world
    run_id = start(api, agent)
    llm.fail(401, f"Incorrect API key provided: {KEY}")
    assert generate(llm.base_url) == 1
    run = row(owner, run_id)
    assert run.status == "failed" and "refused the API key (401)" in run.error and KEY not in run.error


@pytest.mark.parametrize("settings_overrides", [{"llm_timeout_s": 0.2}], indirect=True)
@pytest.mark.parametrize("script, says", [
    (lambda llm: llm.slow(1.5, {"solutions": []}), "did not answer within 0.2 s"),
    (lambda llm: llm.garbage(), "not a chat completion"),
    (lambda llm: llm.answer("Here you go: change the prompt!"), "not valid JSON"),
    (lambda llm: llm.answer({"ideas": []}), "without a solutions array"),
    (lambda llm: llm.fail(503), "HTTP 503"),
])
def test_a_slow_or_garbled_endpoint_fails_the_run_after_its_attempts(world, llm, script, says):
    api, owner, agent, _ = world
    run_id = start(api, agent)
    script(llm)
    generate(llm.base_url, llm_timeout_s=0.2)
    run = row(owner, run_id)
    assert (run.status, run.attempts, run.solution_count) == ("failed", 3, 0)
    assert run.error.startswith("Generation failed after 3 attempts: ") and says in run.error


def test_a_failed_attempt_is_retried_and_the_next_may_succeed(world, llm):
    api, owner, agent, feedback = world
    run_id = start(api, agent)
    llm.fail(429)
    llm.answer(valid(feedback))
    generate(llm.base_url)
    run = row(owner, run_id)
    assert (run.status, run.attempts, run.solution_count, run.error) == ("pendingReview", 2, 1, None)


def test_a_run_whose_worker_died_is_taken_again_and_its_late_outcome_is_dropped(world, llm):
    api, owner, agent, feedback = world
    run_id = start(api, agent)
    with session():
        died = generation.claim(lease_s=0.2)
        assert died.run_id == run_id and died.attempt == 1
        assert generation.claim(lease_s=0.2) is None  # leased: no one else takes it
    time.sleep(0.3)
    llm.answer(valid(feedback))
    assert generate(llm.base_url) == 1
    run = row(owner, run_id)
    assert (run.status, run.attempts, run.solution_count) == ("pendingReview", 2, 1)
    with session():
        assert generation.complete(died, valid(feedback)["solutions"]) is None
        assert generation.fail(died, "late", retry=False) is None
        assert generation.renew(died, 10) is None
    assert row(owner, run_id).solution_count == 1


def test_a_run_whose_workers_keep_dying_fails_after_its_attempts(world, llm):
    api, owner, agent, feedback = world
    run_id = start(api, agent)
    for attempt in range(1, generation.MAX_ATTEMPTS + 1):
        with session():
            assert generation.claim(lease_s=60, now=utcnow() + timedelta(minutes=2 * attempt)).attempt == attempt
    # Its last lease runs out: the next claim fails it.
    with session():
        job = generation.claim(lease_s=60, now=utcnow() + timedelta(minutes=10))
    from api.optimization_worker import OptimizationWorkers
    from core.settings import Settings
    OptimizationWorkers(Settings(llm_base_url=llm.base_url)).work(job)
    run = row(owner, run_id)
    assert run.status == "failed" and run.error.startswith("Generation failed after 3 attempts: ")
    assert llm.requests == []


def test_the_lease_is_renewed_while_the_endpoint_thinks(world, llm):
    api, owner, agent, feedback = world
    run_id = start(api, agent)
    llm.slow(1.0, valid(feedback))
    assert factories.generate(llm_base_url=llm.base_url, optimization_lease_s=0.3) == 1
    run = row(owner, run_id)
    assert (run.status, run.attempts) == ("pendingReview", 1)
    assert len(llm.requests) == 1


def test_an_external_run_past_its_deadline_fails(world, llm):
    api, owner, agent, _ = world
    run_id = api("POST", "/solutions/runs", json={"agentId": agent, "optimizer": "external"})["run"]["id"]
    assert generate(llm.base_url) == 0  # before its deadline it is no worker's
    with session():
        OptimizationRun.update(lease_until=utcnow() - timedelta(seconds=1)).where(OptimizationRun.id == run_id).execute()
    assert generate(llm.base_url, external_optimizer_timeout_s=3600) == 1
    run = row(owner, run_id)
    assert (run.status, run.error) == ("failed", "The external optimizer did not finish the run within 3600 s.")
    assert llm.requests == []


def test_a_deleted_run_is_no_ones(world, llm):
    api, owner, agent, feedback = world
    run_id = start(api, agent)
    with session():
        job = generation.claim(lease_s=60)
        runs.delete(workspace_id=owner.workspace_id, run_id=run_id)
        assert generation.complete(job, valid(feedback)["solutions"]) is None


@pytest.mark.parametrize("settings_overrides", [{"optimization_workers": 1, "optimization_lease_s": 5}],
                         indirect=True)
def test_the_apps_worker_threads_generate_on_their_own(world, llm):
    api, owner, agent, feedback = world
    llm.answer(valid(feedback))
    run_id = start(api, agent)
    deadline = time.monotonic() + 30
    while api("GET", f"/solutions/runs/{run_id}")["run"]["status"] == "generating":
        assert time.monotonic() < deadline, "no worker thread generated the run"
        time.sleep(0.05)
    assert api("GET", f"/solutions/runs/{run_id}")["run"]["status"] == "pendingReview"


# --- changes ------------------------------------------------------------------------------------

CONFIG = {"prompt": "Line one.\nLine two.\n", "model": {"temperature": 0.7}, "tools": [{"name": "a"}],
          "metadata": {"a/b": 1, "m~n": 2}}


def test_pointers_reach_nested_values_array_items_and_escaped_keys():
    assert changes.value_at(CONFIG, "/model/temperature") == 0.7
    assert changes.value_at(CONFIG, "/tools/0/name") == "a"
    assert changes.value_at(CONFIG, "/metadata/a~1b") == 1
    assert changes.value_at(CONFIG, "/metadata/m~0n") == 2
    assert changes.value_at(CONFIG, "/metadata/absent") is None
    for path in ("prompt", "/tools/1/name", "/tools/01", "/nowhere/deeper", "", "/" + "x" * 500):
        with pytest.raises(InvalidInput):
            changes.value_at(CONFIG, path)


def test_a_diff_is_of_the_text_for_strings_and_of_the_json_otherwise():
    text = changes.diff_text("/prompt", "Line one.\nLine two.\n", "Line one.\nLine 2.\n")
    assert text.startswith("--- a/prompt\n+++ b/prompt\n") and "-Line two.\n+Line 2.\n" in text
    assert "-0.7\n+0.2\n" in changes.diff_text("/model/temperature", 0.7, 0.2)
    assert '+    "name": "b"' in changes.diff_text("/tools", [{"name": "a"}], [{"name": "b"}])
    assert changes.diff_text("/prompt", "no newline", "still none").endswith("+still none\n")


def test_a_change_must_make_a_valid_agent_and_change_something():
    from models.configs import schemas
    config = schemas.complete("agent", {"prompt": "You book tables."})
    change = changes.propose(config, "/model/temperature", 0.2)
    assert change["oldValue"] == 0.7 and change["newValue"] == 0.2
    with pytest.raises(InvalidInput, match="changes nothing"):
        changes.propose(config, "/prompt", "You book tables.")
    with pytest.raises(InvalidInput, match="temperature"):
        changes.propose(config, "/model/temperature", 3)
    with pytest.raises(InvalidInput):
        changes.propose(config, "/unknownField", "x")
    assert changes.applied(config, "/model/temperature", 0.2)["model"]["temperature"] == 0.2
    assert config["model"]["temperature"] == 0.7  # the input is left as it was
