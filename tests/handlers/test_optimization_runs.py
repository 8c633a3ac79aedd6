"""Optimization runs over HTTP: the whole loop from calls to a completed run against a local
chat-completions server, the feedback a run starts from and its bounds, invalid proposals dropped
and reported, the external optimizer's flow, deletion, and GET /solutions/runs with every sort,
filter, search and malformed filter state."""
from __future__ import annotations

import base64
import json
import uuid
from datetime import timedelta

import pytest

from models.feedback.tables import Feedback, FeedbackReference
from models.kernel.db import session, utcnow
from tests.support import factories
from tests.support.client import Api

KEY = "sk-test-optimizer-key"
PROMPT = "You book tables at Chez Test."


@pytest.fixture
def settings_overrides(llm):
    return {"llm_base_url": llm.base_url, "llm_api_key": KEY, "llm_model": "test-model"}


@pytest.fixture
def world(platform, llm):
    owner = platform.workspace()
    agent = factories.agent(owner, "Booker", config={"prompt": PROMPT})
    return Api(platform, owner), owner, agent


def generate(llm, **settings):
    return factories.generate(llm_base_url=llm.base_url, llm_api_key=KEY, llm_model="test-model", **settings)


def references_of(owner, feedback_id: str) -> set[tuple[str, str]]:
    with session():
        return {(r.relation, r.entity_type) for r in FeedbackReference.in_workspace(owner.workspace_id).where(
            FeedbackReference.feedback == feedback_id)}


def test_the_whole_loop_from_calls_to_a_completed_run(world, llm):
    api, owner, agent = world
    call_a = factories.call(owner, agent_id=agent, summary="The caller booked a table for Friday.",
                            transcript="AI: Booked. User: For when? AI: Goodbye.")
    call_b = factories.call(owner, agent_id=agent, summary="The caller asked twice for the address.")
    unconfirmed = factories.feedback(owner, "The agent did not confirm the booking", call_id=call_a, severity=4)
    greeting = factories.feedback(owner, "The greeting is too long", call_id=call_b, severity=2)
    llm.answer({"solutions": [
        factories.proposal([unconfirmed], new_value=PROMPT + " Repeat the date and time before you hang up."),
        factories.proposal([greeting], title="Shorter greeting", path="/firstMessage", new_value="Chez Test, hello!"),
    ]})

    run = api("POST", "/solutions/runs", json={"agentId": agent, "instructions": "Keep it polite."})["run"]
    assert (run["status"], run["feedbackCount"], run["solutionCount"], run["agentName"]) == ("generating", 2, 0, "Booker")
    assert generate(llm) == 1
    run = api("GET", f"/solutions/runs/{run['id']}")["run"]
    assert (run["status"], run["solutionCount"], run["dropped"], run["error"]) == ("pendingReview", 2, [], None)

    # What the endpoint was asked: the configuration, each feedback with its call, the instructions.
    asked = json.loads(llm.prompts()[0])
    assert asked["configuration"]["prompt"] == PROMPT and asked["instructions"] == "Keep it polite."
    by_title = {f["title"]: f for f in asked["feedback"]}
    assert by_title["The agent did not confirm the booking"]["callTranscriptExcerpt"].startswith("AI: Booked.")
    assert by_title["The greeting is too long"]["severity"] == 2

    confirm, shorter = run["solutions"]
    assert confirm["change"]["path"] == "/prompt" and confirm["change"]["oldValue"] == PROMPT
    assert "+You book tables at Chez Test. Repeat the date" in confirm["change"]["diff"]
    assert confirm["feedbackIds"] == [unconfirmed] and confirm["feedbacks"][0]["id"] == unconfirmed
    assert confirm["feedbacks"][0]["solutionId"] == confirm["id"]
    assert ("proposed_fix", "solution") in references_of(owner, unconfirmed)

    accepted = api("POST", f"/solutions/{confirm['id']}/accept", json={"note": "Good catch."})["solution"]
    assert accepted["decision"] == "accepted" and accepted["patchDecisions"]["note"] == "Good catch."
    assert accepted["patchDecisions"]["decidedBy"] == owner.user_id and accepted["reviewedAt"]
    newest = api.versions(agent)[0]
    assert newest["id"] == accepted["versionId"] == accepted["patchDecisions"]["versionId"]
    assert newest["name"] == "Solution: Confirm bookings aloud"
    number = accepted["feedbacks"][0]["number"]
    assert newest["closedFeedbacks"] == [{"id": unconfirmed, "number": number,
                                          "title": "The agent did not confirm the booking"}]
    head = api("GET", f"/agents/{agent}")["agent"]
    assert head["config"]["prompt"].endswith("Repeat the date and time before you hang up.")
    assert accepted["feedbacks"][0]["resolved"] is True
    assert ("fixed_by", "version") in references_of(owner, unconfirmed)
    assert api("GET", f"/solutions/runs/{run['id']}")["run"]["status"] == "pendingReview"

    rejected = api("POST", f"/solutions/{shorter['id']}/reject", json={})["solution"]
    assert rejected["decision"] == "rejected" and rejected["versionId"] is None
    run = api("GET", f"/solutions/runs/{run['id']}")["run"]
    assert (run["status"], run["acceptedCount"], run["rejectedCount"]) == ("completed", 1, 1)
    assert run["completedAt"]
    assert api("POST", f"/solutions/{shorter['id']}/accept", 409, json={})["message"].startswith("Optimization run")
    with session():
        assert Feedback.get_by_id(greeting).resolved is False


def test_invalid_proposals_are_dropped_and_reported(world, llm):
    api, owner, agent = world
    feedback = factories.feedback(owner, "Too chatty", agent_id=agent)
    llm.answer({"solutions": [
        factories.proposal([feedback], title="No such field", path="/notAField", new_value="x"),
        factories.proposal([feedback], title="Too hot", path="/model/temperature", new_value=9),
        factories.proposal([feedback], title="Same prompt", new_value=PROMPT),
        factories.proposal(["not-a-feedback-of-the-run"], title="Someone else's"),
        {"title": "No path", "explanation": "x", "newValue": 1, "feedbackIds": [feedback]},
        factories.proposal([feedback], title="Cooler", path="/model/temperature", new_value=0.2),
    ]})
    run = api("POST", "/solutions/runs", json={"agentId": agent})["run"]
    generate(llm)
    run = api("GET", f"/solutions/runs/{run['id']}")["run"]
    assert run["status"] == "pendingReview" and [s["title"] for s in run["solutions"]] == ["Cooler"]
    reasons = {d["title"]: d["reason"] for d in run["dropped"]}
    assert set(reasons) == {"No such field", "Too hot", "Same prompt", "Someone else's", "No path"}
    assert "notAField" in reasons["No such field"]
    assert "temperature" in reasons["Too hot"]
    assert "changes nothing" in reasons["Same prompt"]
    assert "not one of the run's feedback" in reasons["Someone else's"]
    assert "JSON pointer" in reasons["No path"]


def test_a_run_whose_every_proposal_is_invalid_fails_with_the_reasons(world, llm):
    api, owner, agent = world
    feedback = factories.feedback(owner, "Too chatty", agent_id=agent)
    llm.answer({"solutions": [factories.proposal([feedback], path="/voice", new_value="loud")]})
    run = api("POST", "/solutions/runs", json={"agentId": agent})["run"]
    generate(llm)
    run = api("GET", f"/solutions/runs/{run['id']}")["run"]
    assert run["status"] == "failed" and run["solutions"] == []
    assert run["error"].startswith("The optimizer proposed no valid solution (1 dropped: ")
    llm.answer({"solutions": []})
    run = api("POST", "/solutions/runs", json={"agentId": agent})["run"]
    generate(llm)
    assert api("GET", f"/solutions/runs/{run['id']}")["run"]["error"] == "The optimizer proposed no solution."


def test_a_run_starts_on_the_agents_open_feedback(world):
    api, owner, agent = world
    other_agent = factories.agent(owner, "Other")
    open_one = factories.feedback(owner, "Open", agent_id=agent)
    resolved = factories.feedback(owner, "Resolved", agent_id=agent, status="resolved")
    archived = factories.feedback(owner, "Archived", agent_id=agent)
    with session():
        Feedback.update(is_archived=True).where(Feedback.id == archived).execute()
    factories.feedback(owner, "Another agent's", agent_id=other_agent)
    run = api("POST", "/solutions/runs", json={"agentId": agent})["run"]
    assert run["feedbackCount"] == 1
    # Named feedback may be resolved or archived: the caller chose it.
    run = api("POST", "/solutions/runs", json={"agentId": agent, "feedbackIds": [open_one, resolved, archived]})["run"]
    assert run["feedbackCount"] == 3 and run["baseVersionId"]
    assert api("POST", "/solutions/runs", json={"agentId": other_agent})["run"]["feedbackCount"] == 1


def test_the_feedback_of_a_run_must_be_the_workspaces_and_about_its_agent(world, platform):
    api, owner, agent = world
    other_agent = factories.agent(owner, "Other")
    theirs = platform.workspace("theirs")
    foreign = factories.feedback(theirs, "Theirs", agent_id=factories.agent(theirs))
    elsewhere = factories.feedback(owner, "About the other agent", agent_id=other_agent)
    assert foreign in api("POST", "/solutions/runs", 404, json={"agentId": agent, "feedbackIds": [foreign]})["message"]
    message = api("POST", "/solutions/runs", 400, json={"agentId": agent, "feedbackIds": [elsewhere]})["message"]
    assert elsewhere in message and "not about agent" in message
    quiet = factories.agent(owner, "Quiet")
    assert "no open feedback" in api("POST", "/solutions/runs", 409, json={"agentId": quiet})["message"]
    assert "No agent" in api("POST", "/solutions/runs", 404, json={"agentId": factories.agent(theirs)})["message"]
    too_many = [factories.feedback(owner, f"F{i}", agent_id=quiet) for i in range(101)]
    assert "more than 100" in api("POST", "/solutions/runs", 400, json={"agentId": quiet})["message"]
    api("POST", "/solutions/runs", 400, json={"agentId": quiet, "feedbackIds": too_many})
    assert api("POST", "/solutions/runs", json={"agentId": quiet, "feedbackIds": too_many[:100]})["run"][
        "feedbackCount"] == 100
    api("POST", "/solutions/runs", 400, json={"agentId": quiet, "feedbackIds": too_many[:1], "instructions": "x" * 2001})
    api("POST", "/solutions/runs", json={"agentId": quiet, "feedbackIds": too_many[:1], "instructions": "x" * 2000})


# --- the external optimizer ---------------------------------------------------------------------

def test_an_external_optimizer_posts_solutions_and_finishes_its_run(world):
    api, owner, agent = world
    feedback = factories.feedback(owner, "Too chatty", agent_id=agent)
    run = api("POST", "/solutions/runs", json={"agentId": agent, "optimizer": "external"})["run"]
    assert (run["status"], run["optimizer"]) == ("generating", "external")
    assert "no solution yet" in api("POST", f"/solutions/runs/{run['id']}/finish", 409, json={})["message"]
    good = factories.proposal([feedback], title="Cooler", path="/model/temperature", new_value=0.2)
    bad = factories.proposal([feedback], title="Broken", path="/model/temperature", new_value="hot")
    message = api("POST", f"/solutions/runs/{run['id']}/solutions", 400, json={"solutions": [good, bad]})["message"]
    assert message.startswith("solutions[1]: ")
    assert api("GET", f"/solutions/runs/{run['id']}")["run"]["solutionCount"] == 0  # all or nothing
    run = api("POST", f"/solutions/runs/{run['id']}/solutions", json={"solutions": [good]})["run"]
    run = api("POST", f"/solutions/runs/{run['id']}/solutions", json={"solutions": [
        factories.proposal([feedback], title="Shorter", path="/firstMessage", new_value="Hi!")]})["run"]
    assert [(s["title"], s["displayOrder"]) for s in run["solutions"]] == [("Cooler", 1), ("Shorter", 2)]
    run = api("POST", f"/solutions/runs/{run['id']}/finish", json={})["run"]
    assert run["status"] == "pendingReview"
    message = api("POST", f"/solutions/runs/{run['id']}/solutions", 409, json={"solutions": [good]})["message"]
    assert "pendingReview" in message
    assert "from pendingReview to failed" in api("POST", f"/solutions/runs/{run['id']}/finish", 409,
                                                 json={"error": "Too late."})["message"]


def test_an_external_optimizer_can_fail_its_run_and_a_builtin_run_takes_no_posts(world):
    api, owner, agent = world
    feedback = factories.feedback(owner, "Too chatty", agent_id=agent)
    run = api("POST", "/solutions/runs", json={"agentId": agent, "optimizer": "external"})["run"]
    run = api("POST", f"/solutions/runs/{run['id']}/finish", json={"error": "Nothing to change."})["run"]
    assert (run["status"], run["error"]) == ("failed", "Nothing to change.")
    builtin = api("POST", "/solutions/runs", json={"agentId": agent})["run"]
    proposal = factories.proposal([feedback])
    assert "built-in" in api("POST", f"/solutions/runs/{builtin['id']}/solutions", 409,
                             json={"solutions": [proposal]})["message"]
    assert "built-in" in api("POST", f"/solutions/runs/{builtin['id']}/finish", 409, json={})["message"]


def test_deleting_a_run_keeps_the_versions_it_made(world):
    api, owner, agent = world
    feedback = factories.feedback(owner, "Too chatty", agent_id=agent)
    run_id = factories.optimization_run(owner, agent)
    (solution,) = factories.run_solutions(owner, run_id, [factories.proposal([feedback])])
    version = api("POST", f"/solutions/{solution}/accept", json={})["solution"]["versionId"]
    assert api("DELETE", f"/solutions/runs/{run_id}") == {"id": run_id, "deleted": True}
    api("GET", f"/solutions/runs/{run_id}", 404)
    api("GET", f"/solutions/{solution}", 404)
    assert api.versions(agent)[0]["id"] == version
    api("DELETE", f"/solutions/runs/{run_id}", 404)


# --- GET /solutions/runs ------------------------------------------------------------------------

def encoded(state) -> str:
    return base64.b64encode(json.dumps(state).encode()).decode()


@pytest.fixture
def listed(world):
    """Five runs: statuses, agents, counts and moments chosen so that each sort has one order."""
    api, owner, agent = world
    other = factories.agent(owner, "Greeter")
    mine = [factories.feedback(owner, f"Mine {i}", agent_id=agent) for i in range(4)]
    theirs = factories.feedback(owner, "Greeter's", agent_id=other)
    base = utcnow().replace(microsecond=0) - timedelta(days=10)
    rows = {}
    for name, agent_id, feedback, status, day in (
            ("a", agent, mine[:1], "generating", 1), ("b", agent, mine[:3], "pendingReview", 2),
            ("c", other, [theirs], "completed", 3), ("d", agent, mine[:2], "failed", 4),
            ("e", agent, mine[:4], "completed", 5)):
        run_id = factories.optimization_run(owner, agent_id, feedback)
        if name in ("b", "e"):
            factories.run_solutions(owner, run_id, [
                factories.proposal(feedback[:1], title=f"Fix {name} {i}", path="/firstMessage", new_value=f"Hi {i}")
                for i in range({"b": 2, "e": 1}[name])])
        factories.set_run(owner, run_id, status=status, created_at=base + timedelta(days=day))
        rows[name] = run_id
    return api, rows, base, agent, other


def names(result, rows) -> str:
    by_id = {v: k for k, v in rows.items()}
    return "".join(by_id[r["id"]] for r in result["runs"])


@pytest.mark.parametrize("sort_by, order, expected", [
    ("createdAt", "desc", "edcba"), ("createdAt", "asc", "abcde"),
    ("feedbackCount", "asc", None), ("feedbackCount", "desc", None),
    ("solutionCount", "desc", None), ("status", "asc", None), ("status", "desc", None)])
def test_every_sort_orders_the_runs(listed, sort_by, order, expected):
    api, rows, _, _, _ = listed
    result = api("GET", "/solutions/runs", sortBy=sort_by, sortOrder=order)
    got = names(result, rows)
    if expected is None:
        # Ties are broken by id (a status's runs by createdAt first), in the same direction: compute the
        # expected order from the rows.
        key = {"feedbackCount": "feedbackCount", "solutionCount": "solutionCount", "status": "status"}[sort_by]
        ties = ("createdAt", "id") if sort_by == "status" else ("id",)
        ranked = sorted(result["runs"], key=lambda r: (r[key], *(r[t] for t in ties)), reverse=order == "desc")
        assert [r["id"] for r in result["runs"]] == [r["id"] for r in ranked]
        values = [r[key] for r in result["runs"]]
        assert values == sorted(values, reverse=order == "desc")
    else:
        assert got == expected
    assert result["summary"] == {"total": 5, "generating": 1, "pendingReview": 1, "completed": 2, "failed": 1}


def test_the_default_order_is_newest_first_and_pages_keep_the_whole_summary(listed):
    api, rows, _, _, _ = listed
    first = api("GET", "/solutions/runs", limit=2)
    assert names(first, rows) == "ed" and first["pagination"] == {"total": 5, "limit": 2, "offset": 0}
    last = api("GET", "/solutions/runs", limit=2, offset=4)
    assert names(last, rows) == "a" and last["summary"]["total"] == 5
    past = api("GET", "/solutions/runs", offset=10)
    assert past["runs"] == [] and past["pagination"]["total"] == 5


def test_runs_carry_their_solutions_with_their_feedback_and_the_agents_name(listed):
    api, rows, _, _, _ = listed
    (b,) = [r for r in api("GET", "/solutions/runs")["runs"] if r["id"] == rows["b"]]
    assert b["agentName"] == "Booker" and [s["title"] for s in b["solutions"]] == ["Fix b 0", "Fix b 1"]
    assert b["solutions"][0]["feedbacks"][0]["title"] == "Mine 0"


def test_filters_narrow_the_list_and_the_summary(listed):
    api, rows, base, agent, other = listed
    result = api("GET", "/solutions/runs", filters=encoded({"status": ["completed", "failed"]}))
    assert names(result, rows) == "edc"
    assert result["summary"] == {"total": 3, "generating": 0, "pendingReview": 0, "completed": 2, "failed": 1}
    assert names(api("GET", "/solutions/runs", filters=encoded({"agentIds": [other]})), rows) == "c"
    window = {"createdFrom": (base + timedelta(days=2)).isoformat() + "Z",
              "createdTo": (base + timedelta(days=4)).isoformat() + "Z"}
    assert names(api("GET", "/solutions/runs", filters=encoded(window)), rows) == "cb"  # from inclusive, to exclusive
    both = encoded({"status": ["completed"], "agentIds": [agent]})
    assert names(api("GET", "/solutions/runs", filters=both), rows) == "e"
    urlsafe = base64.urlsafe_b64encode(json.dumps({"agentIds": [other]}).encode()).decode().rstrip("=")
    assert names(api("GET", "/solutions/runs", filters=urlsafe), rows) == "c"
    assert names(api("GET", "/solutions/runs", filters=encoded({})), rows) == "edcba"
    # A "+" a client left unescaped arrives as a space: read as the "+" it was.
    plus = encoded({"agentIds": [">>>", other]})
    assert "+" in plus
    assert names(api("GET", "/solutions/runs", filters=plus.replace("+", " ")), rows) == "c"
    assert api("GET", "/solutions/runs", filters=encoded({"agentIds": [str(uuid.uuid4())]}))["summary"]["total"] == 0


def test_search_finds_agent_names_and_solution_titles_in_any_case(listed):
    api, rows, _, _, _ = listed
    assert names(api("GET", "/solutions/runs", search="greeter"), rows) == "c"
    assert names(api("GET", "/solutions/runs", search="FIX B"), rows) == "b"
    result = api("GET", "/solutions/runs", search="book")
    assert names(result, rows) == "edba" and result["summary"]["total"] == 4
    assert api("GET", "/solutions/runs", search="100%")["runs"] == []


@pytest.mark.parametrize("filters, says", [
    ("not base64!", "not valid base64"),
    (base64.b64encode(b"{not json").decode(), "not valid JSON"),
    (base64.b64encode(b"\xff\xfe").decode(), "not valid JSON"),
    (encoded(["completed"]), "not an object"),
    (encoded({"state": ["completed"]}), "unknown key state"),
    (encoded({"status": "completed"}), "filters.status must be an array"),
    (encoded({"status": ["done"]}), "done is not one of"),
    (encoded({"agentIds": [1]}), "filters.agentIds must be an array"),
    (encoded({"createdFrom": 5}), "filters.createdFrom must be an ISO 8601"),
    (encoded({"createdTo": "yesterday"}), "filters.createdTo must be an ISO 8601"),
    (encoded({"createdTo": "2030-01-01T00:00:00"}), "time zone offset"),
])
def test_a_malformed_filter_state_is_400_saying_which(listed, filters, says):
    api = listed[0]
    assert says in api("GET", "/solutions/runs", 400, filters=filters)["message"]


@pytest.mark.parametrize("params", [{"sortBy": "updatedAt"}, {"sortOrder": "up"}, {"limit": 101}, {"offset": -1}])
def test_an_unknown_sort_or_a_page_out_of_bounds_is_400(listed, params):
    listed[0]("GET", "/solutions/runs", 400, **params)


def test_the_list_shows_only_the_workspaces_runs(listed, platform):
    api, rows, _, _, _ = listed
    theirs = Api(platform, platform.workspace("theirs"))
    assert theirs("GET", "/solutions/runs")["summary"]["total"] == 0
    assert theirs("GET", f"/solutions/runs/{rows['a']}", 404)
    assert theirs("GET", "/solutions/runs", filters=encoded({"agentIds": [listed[3]]}))["runs"] == []


def test_created_range_reads_offsets(listed):
    api, rows, base, _, _ = listed
    shifted = (base + timedelta(days=3, hours=2)).isoformat() + "+02:00"  # day 3 at midnight UTC
    assert names(api("GET", "/solutions/runs", filters=encoded({"createdFrom": shifted})), rows) == "edc"


def test_an_agent_with_a_run_at_work_cannot_be_deleted_until_the_run_is_over(world, platform):
    api, owner, agent = world
    feedback = factories.feedback(owner, "Too chatty", agent_id=agent)
    generating = factories.optimization_run(owner, agent, [feedback])
    message = api("DELETE", f"/agents/{agent}", 409)["message"]
    assert f"the optimization run {generating} (generating)" in message
    (only,) = factories.run_solutions(owner, generating, [factories.proposal([feedback])])
    message = api("DELETE", f"/agents/{agent}", 409)["message"]
    assert f"the optimization run {generating} (pendingReview)" in message
    # A failed run keeps nothing; the run in review still does.
    failed = factories.optimization_run(owner, agent, [feedback])
    api("POST", f"/solutions/runs/{failed}/finish", json={"error": "The optimizer gave up."})
    message = api("DELETE", f"/agents/{agent}", 409)["message"]
    assert generating in message and failed not in message
    api("POST", f"/solutions/{only}/reject", json={})
    assert api("GET", f"/solutions/runs/{generating}")["run"]["status"] == "completed"
    api("DELETE", f"/agents/{agent}")
    # The runs outlive their agent, its name gone.
    run = api("GET", f"/solutions/runs/{generating}")["run"]
    assert run["agentId"] == agent and run["agentName"] is None


@pytest.mark.parametrize("settings_overrides", [{"webhook_allow_http": True, "webhook_allow_private_addresses": True}])
def test_a_workspace_llm_integration_runs_the_builtin_optimizer_without_llm_base_url(platform, llm):
    """No LLM_BASE_URL: the workspace's own llm integration is asked, with its key and model, as
    chat sessions and simulations ask it; a workspace without one still fails at once, clearly."""
    api = Api(platform, platform.workspace())
    agent = factories.agent(api.actor, "Booker", config={"prompt": PROMPT})
    feedback = factories.feedback(api.actor, "The agent did not confirm the booking", agent_id=agent)
    factories.integration(api.actor, kind="llm", base_url=llm.base_url, model="workspace-model",
                          secret="sk-workspace-key-1234")
    llm.answer({"solutions": [factories.proposal([feedback], new_value=PROMPT + " Confirm the booking.")]})
    run = api("POST", "/solutions/runs", json={"agentId": agent})["run"]
    assert run["status"] == "generating" and run["error"] is None
    assert factories.generate() == 1  # the worker's settings hold no llm_base_url
    run = api("GET", f"/solutions/runs/{run['id']}")["run"]
    assert (run["status"], run["solutionCount"], run["error"]) == ("pendingReview", 1, None)
    [asked] = llm.requests
    assert asked["authorization"] == "Bearer sk-workspace-key-1234" and asked["body"]["model"] == "workspace-model"

    other = Api(platform, platform.workspace())
    other_agent = factories.agent(other.actor)
    factories.feedback(other.actor, "Too slow", agent_id=other_agent)
    failed = other("POST", "/solutions/runs", json={"agentId": other_agent})["run"]
    assert failed["status"] == "failed" and "add an llm integration to the workspace" in failed["error"]


@pytest.mark.parametrize("settings_overrides", [{"webhook_allow_http": True, "webhook_allow_private_addresses": True}])
def test_a_run_whose_llm_integration_is_deleted_before_the_worker_asks_fails_clearly(platform, llm):
    api = Api(platform, platform.workspace())
    agent = factories.agent(api.actor, "Booker", config={"prompt": PROMPT})
    factories.feedback(api.actor, "Too chatty", agent_id=agent)
    integration = factories.integration(api.actor, kind="llm", base_url=llm.base_url, model="m",
                                        secret="sk-workspace-key-1234")
    run = api("POST", "/solutions/runs", json={"agentId": agent})["run"]
    api("DELETE", f"/integrations/{integration}")
    factories.generate()
    failed = api("GET", f"/solutions/runs/{run['id']}")["run"]
    assert failed["status"] == "failed" and failed["error"].startswith("No language model endpoint is configured")
    assert llm.requests == []
