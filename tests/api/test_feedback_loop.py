"""The product's loop through the API alone, as a workspace lives it: calls reported through the
webhook, a review of one, feedback on both, an optimization run that the app's own worker thread
generates against a chat-completions endpoint (a local one), one solution accepted and one
rejected, the new version closing its feedback, and the references recorded along the way."""
from __future__ import annotations

import time
import uuid

import pytest

from tests.support.client import Api
from tests.support.reports import post_report

PROMPT = "You take bookings for Chez Test."


@pytest.fixture
def settings_overrides(llm):
    # One worker thread in the app, as a server runs it; short leases so that nothing waits long.
    return {"llm_base_url": llm.base_url, "llm_api_key": "sk-loop", "llm_model": "loop-model",
            "optimization_workers": 1, "optimization_lease_s": 5}


def report(platform, owner, agent_id: str, summary: str, transcript: str) -> str:
    call_id = str(uuid.uuid4())
    post_report(platform, owner, {
        "type": "end-of-call-report", "callId": call_id, "workspaceId": owner.workspace_id, "agentId": agent_id,
        "startedAt": "2026-11-23T09:00:00Z", "endedAt": "2026-11-23T09:02:00Z", "durationMs": 120000,
        "status": "completed", "customer": "+14155550123", "summary": summary, "transcript": transcript})
    return call_id


def settled(api: Api, run_id: str, deadline_s: float = 60.0) -> dict:
    """The run once it has left ``generating`` (the worker polls every second)."""
    until = time.monotonic() + deadline_s
    while True:
        run = api("GET", f"/solutions/runs/{run_id}")["run"]
        if run["status"] != "generating" or time.monotonic() > until:
            return run
        time.sleep(0.2)


def test_calls_feedback_a_review_a_run_and_a_version_that_closes_the_feedback(platform, llm):
    owner = platform.workspace()
    api = Api(platform, owner)
    agent = api("POST", "/agents", json={"name": "Booker", "config": {"prompt": PROMPT}})["agent"]["id"]

    unconfirmed_call = report(platform, owner, agent, "The caller booked a table for Friday.",
                              "AI: Booked. User: For when? AI: Goodbye.")
    greeting_call = report(platform, owner, agent, "The caller waited through a long greeting.", "AI: Welcome...")

    # A reviewer scores one call and raises feedback from the done review.
    review = api("POST", "/reviews", json={"targetType": "call", "targetId": unconfirmed_call,
                                           "rubric": [{"name": "Accuracy", "min": 1, "max": 5}]})["review"]
    api("PATCH", f"/reviews/{review['id']}", json={"scores": {"Accuracy": 2}, "status": "done"})
    unconfirmed = api("POST", f"/reviews/{review['id']}/feedback",
                      json={"title": "The agent did not confirm the booking", "severity": 4})["feedback"]
    assert (unconfirmed["callId"], unconfirmed["agentId"], unconfirmed["createdBy"]) == (unconfirmed_call, agent,
                                                                                        "review")
    # Someone flags the other call by hand.
    greeting = api("POST", "/feedbacks", json={"title": "The greeting is too long", "callId": greeting_call,
                                               "severity": 2})["feedback"]
    assert greeting["agentName"] == "Booker" and greeting["customerNumber"] == "+14155550123"
    assert [f["number"] for f in (unconfirmed, greeting)] == [1, 2]

    # The run takes the agent's open feedback; the worker thread asks the endpoint.
    llm.answer({"solutions": [
        {"title": "Confirm bookings aloud", "explanation": "Callers hung up unsure of their booking.",
         "path": "/prompt", "newValue": PROMPT + " Repeat the date and time before you hang up.",
         "feedbackIds": [unconfirmed["id"]]},
        {"title": "Shorter greeting", "explanation": "Callers waited.", "path": "/firstMessage",
         "newValue": "Chez Test, hello!", "feedbackIds": [greeting["id"]]},
        {"title": "Not a setting", "explanation": "Invalid.", "path": "/noSuchSetting", "newValue": 1,
         "feedbackIds": [greeting["id"]]},
    ]})
    run = api("POST", "/solutions/runs", json={"agentId": agent})["run"]
    assert (run["status"], run["feedbackCount"]) == ("generating", 2)
    run = settled(api, run["id"])
    assert (run["status"], run["solutionCount"], run["error"]) == ("pendingReview", 2, None)
    assert [d["title"] for d in run["dropped"]] == ["Not a setting"]
    listed = api("GET", "/solutions/runs", search="greeting")
    assert [r["id"] for r in listed["runs"]] == [run["id"]]
    assert listed["summary"] == {"total": 1, "generating": 0, "pendingReview": 1, "completed": 0, "failed": 0}

    confirm, shorter = sorted(run["solutions"], key=lambda s: s["displayOrder"])
    accepted = api("POST", f"/solutions/{confirm['id']}/accept", json={"note": "Checked on three calls."})["solution"]
    api("POST", f"/solutions/{shorter['id']}/reject", json={})
    run = api("GET", f"/solutions/runs/{run['id']}")["run"]
    assert (run["status"], run["acceptedCount"], run["rejectedCount"]) == ("completed", 1, 1)

    # The new version closes the accepted solution's feedback, and only that.
    versions = api("GET", f"/versions/agent/{agent}")["versions"]
    assert versions[0]["id"] == accepted["versionId"]
    assert versions[0]["closedFeedbacks"] == [{"id": unconfirmed["id"], "number": 1,
                                               "title": "The agent did not confirm the booking"}]
    assert all(v["closedFeedbacks"] == [] for v in versions[1:])
    closed = api("GET", f"/feedbacks/{unconfirmed['id']}")["feedback"]
    assert (closed["resolved"], closed["status"], closed["closedByVersionId"], closed["solutionId"]) == \
        (True, "resolved", accepted["versionId"], confirm["id"])
    assert api("GET", f"/feedbacks/{greeting['id']}")["feedback"]["resolved"] is False
    assert [f["id"] for f in api("GET", "/feedbacks", resolved="false")["feedbacks"]] == [greeting["id"]]

    # The references the actions made, in the shape the list answers.
    listed = api("GET", f"/feedbacks/{unconfirmed['id']}/references")
    assert listed["success"] is True
    made = {(r["entityType"], r["entityId"], r["relation"]) for r in listed["references"]}
    assert made == {("call", unconfirmed_call, "source"), ("review", review["id"], "source"),
                    ("solution", confirm["id"], "proposed_fix"), ("version", accepted["versionId"], "fixed_by")}
    urls = {r["entityType"]: r["url"] for r in listed["references"]}
    assert urls["version"] == f"/api/v2/versions/agent/{agent}/{accepted['versionId']}"
    assert urls["call"] == f"/api/v2/call/{unconfirmed_call}"
    assert set(listed["references"][0]) == {"id", "feedbackId", "entityType", "entityId", "relation", "createdAt",
                                            "url", "label", "createdBy"}
