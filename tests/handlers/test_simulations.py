"""Simulations over HTTP against a local chat-completions server: scripted and persona callers,
every way a conversation ends, verdicts of the assigned suites, counts and usage, the endpoint
failing (retried, then failed; a refused key at once; none configured), cancel, delete, re-runs
and their regressions, external verdicts, feedback raised from a failed iteration, leases that run
out, the bounds of a simulation, and other workspaces' ids."""
from __future__ import annotations

from datetime import timedelta

import pytest

from api.simulation_worker import SimulationWorkers
from core.settings import Settings
from models.kernel import chat_completions
from models.kernel import leases
from models.kernel.db import database, session, utcnow
from models.simulations import execution
from models.simulations.tables import Iteration
from tests.support import factories
from tests.support.client import Api
from tests.support.conversations import Sides

KEY = "sk-test-simulations"
PROMPT = "You book appointments at the Test Clinic."


@pytest.fixture
def settings_overrides(llm):
    return {"llm_base_url": llm.base_url, "llm_api_key": KEY, "llm_model": "test-model",
            "llm_input_cost_per_million": 2.0, "llm_output_cost_per_million": 8.0}


@pytest.fixture
def world(platform, llm):
    owner = platform.workspace()
    agent = factories.agent(owner, "Booker", config={"prompt": PROMPT, "firstMessage": "Test Clinic, hello!",
                                                     "endCallPhrases": ["goodbye"]})
    return Api(platform, owner), owner, agent


def suite(api, agent: str, *assertions: dict, name: str = "Booking") -> dict:
    created = api("POST", "/unit-tests/suites", json={"name": name})["suite"]
    for assertion in assertions:
        api("POST", f"/unit-tests/suites/{created['id']}/assertions", json=assertion)
    if agent:
        api("POST", f"/unit-tests/suites/{created['id']}/assignments", json={"entityType": "agent", "entityId": agent})
    return created


def persona(api, name: str = "Impatient Ian", **fields) -> dict:
    body = {"name": name, "goal": "Book an appointment for Tuesday morning", "traits": ["impatient"],
            "facts": {"accountNumber": "12345"}, "constraints": ["never gives a date of birth"], **fields}
    return api("POST", "/personas", json=body)["persona"]


def scripted(api, agent: str, lines: list[str], **more) -> dict:
    body = {"name": "Smoke", "entityType": "agent", "entityId": agent, "script": lines, **more}
    return api("POST", "/simulations", json=body)["simulation"]


def call(api, method: str, path: str, json=None, params=None):
    """The raw answer, for a test of an error's status and body."""
    return api.client.request(method, "/api/v2" + path, json=json, headers=api.actor.headers,
                              params={"workspaceId": api.actor.workspace_id, **(params or {})})


def iterations(api, simulation: dict) -> list[dict]:
    return api("GET", f"/simulations/{simulation['id']}/iterations", **{"limit": 100})["iterations"]


def detail(api, simulation: dict, number: int = 1) -> dict:
    listed = iterations(api, simulation)
    return api("GET", f"/simulations/{simulation['id']}/iterations/{listed[number - 1]['id']}")["iteration"]


def words(text: str) -> int:
    return len(text.split())


def test_a_scripted_caller_is_answered_turn_by_turn_and_judged_by_the_assigned_suite(world, llm):
    api, owner, agent = world
    checks = suite(api, agent, {"name": "Mentions Tuesday", "kind": "contains", "text": "tuesday"},
                   {"name": "No refund talk", "kind": "not-contains", "text": "refund"},
                   {"name": "Short", "kind": "max-turns", "max": 4})
    sides = Sides(agent=["Tuesday at 9 works.", "You are welcome."])
    llm.respond(sides)
    simulation = scripted(api, agent, ["I need an appointment on Tuesday.", "Thanks, that is all."])
    assert (simulation["status"], simulation["counts"]["total"], simulation["counts"]["queued"]) == ("queued", 1, 1)
    assert [a["name"] for a in simulation["assertions"]] == ["Mentions Tuesday", "No refund talk", "Short"]
    assert simulation["suiteIds"] == [checks["id"]]
    assert factories.simulate() == 1

    done = api("GET", f"/simulations/{simulation['id']}")["simulation"]
    assert done["status"] == "completed" and done["finishedAt"] is not None
    assert done["counts"] == {"total": 1, "queued": 0, "running": 0, "completed": 1, "passed": 1, "failed": 0,
                              "cancelled": 0}
    iteration = detail(api, done)
    assert [(t["speaker"], t["text"]) for t in iteration["transcript"]] == [
        ("agent", "Test Clinic, hello!"), ("caller", "I need an appointment on Tuesday."),
        ("agent", "Tuesday at 9 works."), ("caller", "Thanks, that is all.")]
    # The caller hung up after its last line, and 4 turns is the maximum the suite allows.
    assert (iteration["status"], iteration["endedBy"]) == ("completed", "caller")
    starts = [t["atMs"] for t in iteration["transcript"]]
    assert starts == sorted(starts) and starts[0] == 0 and iteration["durationMs"] > starts[-1]
    verdicts = {v["name"]: v for v in iteration["verdicts"]}
    assert {name: v["passed"] for name, v in verdicts.items()} == {
        "Mentions Tuesday": True, "No refund talk": True, "Short": True}
    assert iteration["passed"] is True
    # The agent side spoke with the version's prompt, the caller's words as the user's.
    first = sides.asked["agent"][0]
    assert first["messages"][0] == {"role": "system", "content": PROMPT}
    assert first["messages"][1:] == [{"role": "assistant", "content": "Test Clinic, hello!"},
                                     {"role": "user", "content": "I need an appointment on Tuesday."}]
    assert first["model"] == "test-model" and first["temperature"] == 0.7 and first["max_tokens"] == 1024
    # Usage is the endpoint's count (the local server counts words), cost at the configured prices.
    prompt = sum(words(m["content"]) for body in sides.asked["agent"] for m in body["messages"])
    completion = sum(words(text) for text in ["Tuesday at 9 works.", "You are welcome."][:len(sides.asked["agent"])])
    assert iteration["usage"] == {"promptTokens": prompt, "completionTokens": completion}
    assert iteration["cost"] == pytest.approx((prompt * 2.0 + completion * 8.0) / 1e6)
    assert done["usage"] == iteration["usage"]


def test_a_new_simulation_and_its_rerun_wake_this_processes_workers_once_committed(world):
    """Workers poll for iterations other processes queue; this process's start on its own at once."""
    api, owner, agent = world
    told = []

    def wake():
        with session():
            told.append((database.in_transaction(),
                         Iteration.select().where(Iteration.status == "queued").count()))

    leases.on_due(execution.TABLE, wake)
    try:
        first = scripted(api, agent, ["Hello."])
        assert told == [(False, 1)]  # after the commit: the iteration is there to claim
        api("POST", f"/simulations/{first['id']}/rerun", json={})
        assert told == [(False, 1), (False, 2)]
        # Made by the domain outside a request's unit of work: after its own transaction too.
        factories.simulation(owner, agent, script=["Hello."])
        assert told[-1] == (False, 3)
    finally:
        leases.forget(execution.TABLE, wake)
    scripted(api, agent, ["Hello."])
    assert len(told) == 3  # forgotten


def test_a_failed_assertion_fails_the_iteration_with_its_reason(world, llm):
    api, owner, agent = world
    suite(api, agent, {"name": "Offers a refund", "kind": "contains", "text": "refund"})
    llm.respond(Sides(agent=["We do not do that."]))
    simulation = scripted(api, agent, ["Can I get my money back?", "Fine."])
    factories.simulate()
    iteration = detail(api, simulation)
    assert iteration["status"] == "completed" and iteration["passed"] is False
    assert iteration["verdicts"][0]["passed"] is False and iteration["verdicts"][0]["reason"]
    assert api("GET", f"/simulations/{simulation['id']}")["simulation"]["counts"]["passed"] == 0


def test_personas_in_scenarios_make_every_combination_and_play_their_part(world, llm):
    api, owner, agent = world
    ian = persona(api, openingLine="Hi, I am in a hurry.")
    ada = persona(api, "Ada", traits=["hard of hearing"], language="en-GB")
    sides = Sides(agent=["Sure, when?"], caller=[{"message": "Tuesday, please.", "endCall": False},
                                                  {"message": "Fine, bye.", "endCall": True}])
    llm.respond(sides)
    simulation = api("POST", "/simulations", json={
        "name": "Personas", "entityType": "agent", "entityId": agent, "personaIds": [ian["id"], ada["id"]],
        "scenarios": [{"name": "New patient", "description": "First visit, no file yet."}, {"name": "Reschedule"}],
        "conversations": 2})["simulation"]
    assert simulation["counts"]["total"] == 8
    assert [p["name"] for p in simulation["personas"]] == ["Impatient Ian", "Ada"]
    assert factories.simulate() == 8
    listed = iterations(api, simulation)
    assert [(i["number"], i["persona"]["name"], i["scenario"]["name"]) for i in listed] == [
        (1, "Impatient Ian", "New patient"), (2, "Impatient Ian", "New patient"),
        (3, "Impatient Ian", "Reschedule"), (4, "Impatient Ian", "Reschedule"),
        (5, "Ada", "New patient"), (6, "Ada", "New patient"), (7, "Ada", "Reschedule"), (8, "Ada", "Reschedule")]
    assert {i["endedBy"] for i in listed} == {"caller"}
    first = detail(api, simulation, 1)
    # The persona's opening line is said first, without asking the endpoint.
    assert (first["transcript"][1]["speaker"], first["transcript"][1]["text"]) == ("caller", "Hi, I am in a hurry.")
    briefs = [body["messages"][0]["content"] for body in sides.asked["caller"]]
    assert any("12345" in b and "never gives a date of birth" in b and "First visit, no file yet." in b
               for b in briefs)
    assert any("hard of hearing" in b and "en-GB" in b for b in briefs)
    # The caller's own turns are its (assistant) side of the history; the agent's are the user's.
    later = next(body for body in sides.asked["caller"] if len(body["messages"]) > 3)
    assert later["messages"][1] == {"role": "user", "content": "Test Clinic, hello!"}
    assert later["response_format"]["type"] == "json_schema"


@pytest.mark.parametrize("config, agent_replies, max_turns, ended_by, turns", [
    ({"endCallPhrases": ["have a nice day"]}, ["Booked. Have a NICE   day!"], 20, "agent", 3),
    ({}, ["Go on."], 5, "max-turns", 5),
    # 10 s at most: the first message and a long reply fill it.
    ({"maxDurationSeconds": 10}, [" ".join(["word"] * 30)], 20, "max-duration", 3),
])
def test_the_agent_a_turn_limit_or_the_duration_ends_a_conversation(world, llm, platform, config, agent_replies,
                                                                    max_turns, ended_by, turns):
    api, owner, _ = world
    agent = factories.agent(owner, "Limited", config={"prompt": PROMPT, "firstMessage": "Hi!", **config})
    llm.respond(Sides(agent=agent_replies))
    simulation = scripted(api, agent, ["One.", "Two.", "Three.", "Four.", "Five.", "Six."], maxTurns=max_turns)
    factories.simulate()
    iteration = detail(api, simulation)
    assert (iteration["endedBy"], len(iteration["transcript"])) == (ended_by, turns)
    if ended_by == "max-duration":
        assert iteration["durationMs"] == 10_000


def test_without_an_endpoint_a_simulation_is_refused_with_the_setting_to_set(platform, monkeypatch):
    monkeypatch.setattr(chat_completions, "_configured", None)  # as core.boot leaves it without LLM_BASE_URL
    owner = platform.workspace()
    agent = factories.agent(owner, "Booker")
    answer = call(Api(platform, owner), "POST", "/simulations", json={
        "name": "x", "entityType": "agent", "entityId": agent, "script": ["Hi"]})
    assert answer.status_code == 503
    assert answer.json()["data"]["code"] == "unavailable" and "LLM_BASE_URL" in answer.json()["data"]["message"]


def test_an_endpoint_that_keeps_failing_fails_the_iteration_after_its_attempts(world, llm):
    api, owner, agent = world
    llm.respond(lambda body: 503)
    simulation = scripted(api, agent, ["Hello?", "Anyone there?"])  # the agent must answer the first
    assert factories.simulate(wait_s=1.5) == execution.MAX_ATTEMPTS
    iteration = detail(api, simulation)
    assert iteration["status"] == "failed" and iteration["attempts"] == execution.MAX_ATTEMPTS
    assert iteration["error"].startswith(f"The conversation failed after {execution.MAX_ATTEMPTS} attempts")
    assert "503" in iteration["error"] and KEY not in iteration["error"]
    done = api("GET", f"/simulations/{simulation['id']}")["simulation"]
    assert done["status"] == "failed" and done["counts"]["failed"] == 1


def test_a_refused_key_fails_the_iteration_at_once_and_a_retry_can_pass(world, llm):
    api, owner, agent = world
    llm.respond(lambda body: 401)
    refused = scripted(api, agent, ["Hello?", "Anyone there?"])
    assert factories.simulate() == 1
    assert "refused the API key" in detail(api, refused)["error"]
    flaky = iter([500])
    llm.respond(lambda body: next(flaky, "Hello, how can I help?"))
    recovered = scripted(api, agent, ["Hello?", "Anyone there?"])
    assert factories.simulate(wait_s=1.0) == 2
    iteration = detail(api, recovered)
    assert (iteration["status"], iteration["attempts"], iteration["error"]) == ("completed", 2, None)


def test_cancel_stops_a_simulation_and_delete_waits_for_it_to_finish(world, llm):
    api, owner, agent = world
    llm.respond(Sides(agent=["Yes?"]))
    simulation = scripted(api, agent, ["Hi"], conversations=3)
    assert call(api, "DELETE", f"/simulations/{simulation['id']}").status_code == 409
    with session():  # one conversation under way when the cancel comes
        job = execution.claim(60)
    cancelled = api("POST", f"/simulations/{simulation['id']}/cancel")["simulation"]
    assert cancelled["status"] == "cancelled"
    assert cancelled["counts"] == {"total": 3, "queued": 0, "running": 0, "completed": 0, "passed": 0, "failed": 0,
                                   "cancelled": 3}
    with session():
        assert execution.still_running(job) is False
    assert factories.simulate() == 0  # nothing is due any more
    assert call(api, "POST", f"/simulations/{simulation['id']}/cancel").status_code == 409
    assert api("DELETE", f"/simulations/{simulation['id']}")["id"] == simulation["id"]
    assert call(api, "GET", f"/simulations/{simulation['id']}").status_code == 404


def test_an_iteration_whose_worker_died_is_resumed_then_failed_after_its_attempts(world, llm):
    api, owner, agent = world
    llm.respond(Sides(agent=["Yes?"]))
    simulation = scripted(api, agent, ["Hi"])

    def claim_after_the_lease_ran_out(job):
        Iteration.update(lease_until=utcnow() - timedelta(seconds=1)).where(Iteration.id == job.iteration_id).execute()
        return execution.claim(60)

    with session():
        first = execution.claim(60)
        assert execution.claim(60) is None  # leased
        second = claim_after_the_lease_ran_out(first)
    assert (second.iteration_id, second.attempt) == (first.iteration_id, 2)
    with session():  # the first worker's late outcome is not stored
        assert execution.fail(first, "late", retry=False) is None
    assert api("GET", f"/simulations/{simulation['id']}")["simulation"]["counts"]["running"] == 1
    with session():
        last = claim_after_the_lease_ran_out(claim_after_the_lease_ran_out(second))
    assert last.attempt == execution.MAX_ATTEMPTS + 1
    SimulationWorkers(Settings(simulation_lease_s=0.4)).work(last)
    iteration = detail(api, simulation)
    assert iteration["status"] == "failed" and "worker stopped before it finished" in iteration["error"]
    assert api("GET", f"/simulations/{simulation['id']}")["simulation"]["status"] == "failed"


def test_a_rerun_on_a_new_version_lists_regressions_and_fixes(world, llm, platform):
    api, owner, agent = world
    suite(api, agent, {"name": "Confirms", "kind": "contains", "text": "confirmed"},
          {"name": "Polite", "kind": "contains", "text": "please"})
    llm.respond(Sides(agent=["Your slot is confirmed."]))
    baseline = scripted(api, agent, ["Book me in.", "Thanks."], conversations=2)
    factories.simulate()
    version = api.save(agent, prompt=PROMPT + " Be brief.")
    llm.respond(Sides(agent=["Yes please, what time?"]))
    rerun = api("POST", f"/simulations/{baseline['id']}/rerun", json={"versionId": version["id"]})["simulation"]
    assert rerun["baselineId"] == baseline["id"] and rerun["versionNumber"] == 2
    assert rerun["counts"]["total"] == 2 and rerun["assertions"] == baseline["assertions"]
    factories.simulate()
    compared = api("GET", f"/simulations/{rerun['id']}/regressions")
    assert [(c["name"], c["before"], c["after"]) for c in compared["regressions"]] == [
        ("Confirms", {"passed": 2, "failed": 0}, {"passed": 0, "failed": 2})]
    assert [c["name"] for c in compared["fixed"]] == ["Polite"]
    # Compared the other way round, each is the other's.
    reverse = api("GET", f"/simulations/{baseline['id']}/regressions", **{"baselineId": rerun["id"]})
    assert ([c["name"] for c in reverse["regressions"]], [c["name"] for c in reverse["fixed"]]) == (
        ["Polite"], ["Confirms"])
    no_baseline = call(api, "GET", f"/simulations/{baseline['id']}/regressions")
    assert no_baseline.status_code == 400 and "baselineId" in no_baseline.json()["data"]["message"]


def test_external_verdicts_join_the_engines_and_turn_the_iteration(world, llm):
    api, owner, agent = world
    checks = suite(api, agent, {"name": "Says hello", "kind": "contains", "text": "hello"})
    llm.respond(Sides(agent=["Hello there."]))
    simulation = scripted(api, agent, ["Hi", "Bye"])
    assertion_id = simulation["assertions"][0]["id"]
    path = f"/simulations/{simulation['id']}/iterations/{iterations(api, simulation)[0]['id']}/verdicts"
    assert call(api, "POST", path, json={"evaluator": "qa", "verdicts": [
        {"name": "x", "passed": True, "reason": ""}]}).status_code == 409  # not finished yet
    factories.simulate()
    iteration = api("POST", path, json={"evaluator": "qa", "verdicts": [
        {"name": "Empathy", "passed": False, "reason": "Curt."},
        {"name": "Greeting", "assertionId": assertion_id, "passed": True, "reason": "Fine."}]})["iteration"]
    assert iteration["passed"] is False
    assert sorted((v["evaluator"], v["name"], v["kind"], v["passed"]) for v in iteration["verdicts"]) == [
        ("engine", "Says hello", "contains", True), ("qa", "Empathy", "external", False),
        ("qa", "Greeting", "contains", True)]
    assert api("GET", f"/simulations/{simulation['id']}")["simulation"]["counts"]["passed"] == 0
    # The same name again replaces it, and the iteration passes once every verdict does.
    iteration = api("POST", path, json={"evaluator": "qa", "verdicts": [
        {"name": "Empathy", "passed": True, "reason": "On reflection, fine."}]})["iteration"]
    assert iteration["passed"] is True and len(iteration["verdicts"]) == 3
    assert api("GET", f"/simulations/{simulation['id']}")["simulation"]["counts"]["passed"] == 1
    for body, says in [({"evaluator": "engine", "verdicts": [{"name": "x", "passed": True, "reason": ""}]}, "engine"),
                       ({"evaluator": "qa", "verdicts": [{"name": "x", "assertionId": checks["id"], "passed": True,
                                                          "reason": ""}]}, "assertionId"),
                       ({"evaluator": "qa", "verdicts": [{"name": "x", "passed": True, "reason": ""},
                                                         {"name": "X", "passed": False, "reason": ""}]}, "unique")]:
        refused = call(api, "POST", path, json=body)
        assert refused.status_code == 400 and says in refused.json()["data"]["message"], body


def test_a_failed_iteration_raises_feedback_that_reproduces_the_simulation(world, llm):
    api, owner, agent = world
    suite(api, agent, {"name": "Offers a refund", "kind": "contains", "text": "refund"})
    llm.respond(Sides(agent=["No."]))
    simulation = scripted(api, agent, ["Money back?", "Fine."])
    factories.simulate()
    iteration = iterations(api, simulation)[0]
    feedback = api("POST", f"/simulations/{simulation['id']}/iterations/{iteration['id']}/feedback",
                   json={"severity": 4})["feedback"]
    assert feedback["title"] == "Smoke: iteration 1 failed" and feedback["severity"] == 4
    assert feedback["agentId"] == agent and "Offers a refund" in feedback["description"]
    references = api("GET", f"/feedbacks/{feedback['id']}/references")["references"]
    assert [(r["entityType"], r["entityId"], r["relation"]) for r in references] == [
        ("simulation", simulation["id"], "reproduces")]
    llm.respond(Sides(agent=["A refund, sure."]))
    passing = scripted(api, agent, ["Money back?", "Fine."])
    path = f"/simulations/{passing['id']}/iterations/{iterations(api, passing)[0]['id']}/feedback"
    assert call(api, "POST", path, json={}).status_code == 409  # not held yet
    factories.simulate()
    # One that passed its checks may still be what a person saw go wrong.
    assert api("POST", path, json={})["feedback"]["title"] == "Smoke: iteration 1 needs a look"


@pytest.mark.parametrize("body, says", [
    ({"script": ["Hi"], "personaIds": ["00000000-0000-4000-8000-000000000000"]}, "not both"),
    ({}, "not both and not neither"),
    ({"script": ["Hi"], "scenarios": [{"name": "a"}]}, "scripted caller takes none"),
    ({"personaIds": ["P", "P"]}, "twice"),
    ({"personaIds": ["P"], "scenarios": [{"name": "a"}, {"name": "A"}]}, "unique"),
    ({"personaIds": ["P"] * 1, "scenarios": [{"name": f"s{i}"} for i in range(20)], "conversations": 20}, "makes 400"),
])
def test_the_bounds_of_a_simulation(world, body, says):
    api, owner, agent = world
    persona_id = persona(api)["id"]
    body = {k: ([persona_id if p == "P" else p for p in v] if k == "personaIds" else v) for k, v in body.items()}
    answer = call(api, "POST", "/simulations", json={"name": "x", "entityType": "agent", "entityId": agent, **body})
    if says == "makes 400":  # 1 × 20 × 20 = 400: within the 500 allowed
        assert answer.status_code == 200 and answer.json()["data"]["result"]["simulation"]["counts"]["total"] == 400
        return
    assert answer.status_code == 400 and says in answer.json()["data"]["message"]


def test_more_than_500_conversations_are_refused(world):
    api, owner, agent = world
    ids = [persona(api, f"P{i}")["id"] for i in range(2)]
    answer = call(api, "POST", "/simulations", json={
        "name": "x", "entityType": "agent", "entityId": agent, "personaIds": ids,
        "scenarios": [{"name": f"s{i}"} for i in range(13)], "conversations": 20})
    assert answer.status_code == 400 and "makes 520" in answer.json()["data"]["message"]


def test_another_workspaces_ids_are_not_found(world, platform, llm):
    api, owner, agent = world
    other = platform.workspace()
    other_api = Api(platform, other)
    their_agent = factories.agent(other, "Theirs")
    their_persona = persona(other_api)
    their_suite = suite(other_api, their_agent)
    base = {"name": "x", "entityType": "agent", "entityId": agent}
    for body in [{**base, "entityId": their_agent, "script": ["Hi"]},
                 {**base, "personaIds": [their_persona["id"]]},
                 {**base, "script": ["Hi"], "suiteIds": [their_suite["id"]]}]:
        assert call(api, "POST", "/simulations", json=body).status_code == 404, body
    their_version = other_api("GET", f"/versions/agent/{their_agent}")["versions"][0]["id"]
    assert call(api, "POST", "/simulations", json={**base, "script": ["Hi"], "versionId": their_version}
                    ).status_code == 404
    llm.respond(Sides(agent=["Hi"]))
    theirs = scripted(other_api, their_agent, ["Hi"])
    for method, path in [("GET", f"/simulations/{theirs['id']}"), ("GET", f"/simulations/{theirs['id']}/iterations"),
                         ("POST", f"/simulations/{theirs['id']}/cancel"),
                         ("GET", f"/simulations/{theirs['id']}/regressions")]:
        assert call(api, method, path).status_code == 404, path
    assert api("GET", "/simulations")["pagination"]["total"] == 0
    mine = scripted(api, agent, ["Hi"])
    assert call(api, "GET", f"/simulations/{mine['id']}/regressions", params={"baselineId": theirs["id"]}
                    ).status_code == 404


def test_a_workflow_is_simulated_with_its_first_agent(world, llm):
    api, owner, agent = world
    flow = factories.workflow(owner, [agent], name="Front desk")
    sides = Sides(agent=["Welcome to the front desk."])
    llm.respond(sides)
    simulation = api("POST", "/simulations", json={"name": "Flow", "entityType": "workflow", "entityId": flow,
                                                   "script": ["Hi", "Bye"]})["simulation"]
    assert (simulation["entityType"], simulation["agentId"]) == ("workflow", agent)
    factories.simulate()
    assert sides.asked["agent"][0]["messages"][0]["content"] == PROMPT
    empty = factories.workflow(owner, [], name="Nobody")
    refused = call(api, "POST", "/simulations", json={"name": "x", "entityType": "workflow", "entityId": empty,
                                                     "script": ["Hi"]})
    assert refused.status_code == 400 and "reaches no agent" in refused.json()["data"]["message"]


def test_the_list_filters_and_pages(world, llm):
    api, owner, agent = world
    other_agent = factories.agent(owner, "Other")
    made = [scripted(api, agent, ["Hi"]) for _ in range(3)] + [scripted(api, other_agent, ["Hi"])]
    page = api("GET", "/simulations", **{"limit": 2})
    assert [s["id"] for s in page["simulations"]] == [made[3]["id"], made[2]["id"]]
    assert page["pagination"] == {"total": 4, "limit": 2, "offset": 0}
    mine = api("GET", "/simulations", **{"entityType": "agent", "entityId": agent})
    assert mine["pagination"]["total"] == 3
    assert api("GET", "/simulations", **{"status": "completed"})["pagination"]["total"] == 0
    half = call(api, "GET", "/simulations", params={"entityId": agent})
    assert half.status_code == 400 and "together" in half.json()["data"]["message"]
    renamed = api("PATCH", f"/simulations/{made[0]['id']}", json={"name": "  Renamed  "})["simulation"]
    assert renamed["name"] == "Renamed"


def test_a_suite_run_is_a_simulation_of_that_suite_alone_in_its_history(world, llm):
    api, owner, agent = world
    one = suite(api, agent, {"name": "Says hi", "kind": "contains", "text": "hi"}, name="One")
    suite(api, agent, {"name": "Says bye", "kind": "contains", "text": "bye"}, name="Two")
    llm.respond(Sides(agent=["Hi!"]))
    run = api("POST", f"/unit-tests/suites/{one['id']}/runs", json={
        "entityType": "agent", "entityId": agent, "script": ["Hello", "Bye"]})["simulation"]
    assert (run["suiteId"], run["suiteIds"], [a["name"] for a in run["assertions"]]) == (
        one["id"], [one["id"]], ["Says hi"])
    factories.simulate()
    history = api("GET", f"/unit-tests/suites/{one['id']}/runs")
    assert [s["id"] for s in history["simulations"]] == [run["id"]]
    assert history["simulations"][0]["counts"]["passed"] == 1
    lone = call(api, "POST", f"/unit-tests/suites/{one['id']}/runs", json={
        "entityType": "agent", "entityId": agent, "script": ["Hello"], "scenario": {"name": "x"}})
    assert lone.status_code == 400 and "personaId" in lone.json()["data"]["message"]


def test_in_voice_mode_the_agent_reads_what_the_speech_engine_heard(world, llm, converted_model):
    api, owner, agent = world
    sides = Sides(agent=["Tuesday at nine is free."])
    llm.respond(sides)
    lines = ["I would like to book an appointment for Tuesday morning.", "Thank you, goodbye."]
    clean = scripted(api, agent, lines, voice={})
    phone = scripted(api, agent, lines, voice={"telephone": True, "snrDb": 10})
    assert (clean["voice"], phone["voice"]) == ({"telephone": False, "snrDb": None}, {"telephone": True, "snrDb": 10})
    assert factories.simulate(stt_model_path=str(converted_model)) == 2
    for simulation in (clean, phone):
        iteration = detail(api, simulation)
        assert iteration["status"] == "completed", iteration["error"]
        callers = [t for t in iteration["transcript"] if t["speaker"] == "caller"]
        assert [t["text"] for t in callers] == lines
        assert all(isinstance(t["heard"], str) and 0 <= t["wordErrorRate"] for t in callers)
        assert iteration["wordErrorRate"] is not None
        # A turn lasts as long as its audio: 10 words spoken take more than a second.
        assert callers[0]["atMs"] < iteration["transcript"][2]["atMs"] - 1000
    # The agent was given what was heard, not what was said.
    heard = detail(api, clean)["transcript"][1]["heard"]
    assert sides.asked["agent"][0]["messages"][-1] == {"role": "user", "content": heard}
    assert "tuesday" in heard.lower()
    assert detail(api, clean)["wordErrorRate"] <= 0.35
    # A language the synthesiser has no voice for is refused when the simulation is made.
    klingon = persona(api, "Worf", language="tlh")
    refused = call(api, "POST", "/simulations", json={"name": "x", "entityType": "agent", "entityId": agent,
                                                      "personaIds": [klingon["id"]], "voice": {}})
    assert refused.status_code == 400 and "'tlh'" in refused.json()["data"]["message"]
