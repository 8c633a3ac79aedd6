"""Feedback over HTTP: made on a call, an agent or a workflow; read, changed, archived, resolved,
reopened and deleted; the list's every filter and sort against the set and order expected;
bounds at the limit and just past it; another workspace's ids (404, or nothing found); the
customer's number whole only with calls:pii."""
from __future__ import annotations

from datetime import timedelta

import pytest

from models.feedback.tables import Feedback
from models.kernel.db import session, utcnow
from tests.support import factories
from tests.support.client import Api, owner

UNKNOWN = "0f0e0d0c-0b0a-4908-8706-050403020100"


def make(api: Api, expect: int = 200, **body) -> dict:
    result = api("POST", "/feedbacks", expect, json=body)
    return result["feedback"] if expect == 200 else result


def listed(api: Api, **params) -> list[int]:
    """The numbers of the feedback the list shows with ``params``, in its order."""
    return [f["number"] for f in api("GET", "/feedbacks", limit=100, **params)["feedbacks"]]


def test_feedback_on_a_call_takes_its_agent_a_number_and_the_call_s_details(platform):
    api = owner(platform)
    agent_id = factories.agent(api.actor, name="Front desk")
    call_id = factories.call(api.actor, agent_id=agent_id, customer="+14155550123")
    made = make(api, title="  The agent did not confirm the booking ", description="It said goodbye.\nTwice.",
                severity=4, callId=call_id, messageId="1e2f3a4b-5c6d-4e7f-8a9b-0c1d2e3f4a5b")
    assert made["number"] == 1 and made["title"] == "The agent did not confirm the booking"
    assert made["description"] == "It said goodbye.\nTwice." and made["severity"] == 4
    assert (made["callId"], made["agentId"], made["agentEntityType"], made["agentName"]) == \
        (call_id, agent_id, "agent", "Front desk")
    assert made["status"] == "open" and made["resolved"] is False and made["isArchived"] is False
    assert made["assignedTo"] is None and made["assignees"] == [] and made["commentsCount"] == 0
    assert made["createdBy"] == "user" and made["authorId"] == api.actor.user_id
    assert made["callStartedAt"] is not None and made["customerNumber"] == "+14155550123"  # the owner holds calls:pii
    assert api("GET", f"/feedbacks/{made['id']}")["feedback"] == made
    assert make(api, title="Second", agentId=agent_id)["number"] == 2


def test_feedback_on_a_workflow_and_the_default_severity(platform):
    api = owner(platform)
    workflow_id = factories.workflow(api.actor, [factories.agent(api.actor)], name="Support line")
    made = make(api, title="Loops between two agents", workflowId=workflow_id)
    assert (made["agentId"], made["agentWorkflowId"], made["agentEntityType"], made["agentName"]) == \
        (None, workflow_id, "workflow", "Support line")
    assert made["severity"] == 3 and made["callId"] is None


def test_the_customer_number_is_masked_without_calls_pii(platform):
    api = owner(platform)
    call_id = factories.call(api.actor, customer="+14155550123")
    feedback_id = make(api, title="Rude", callId=call_id)["id"]
    member = Api(platform, platform.member(api.actor, "member"))  # members lack calls:pii
    masked = member("GET", f"/feedbacks/{feedback_id}")["feedback"]["customerNumber"]
    assert masked != "+14155550123" and masked.endswith("0123")
    assert member("GET", "/feedbacks")["feedbacks"][0]["customerNumber"] == masked
    assert api("GET", "/feedbacks")["feedbacks"][0]["customerNumber"] == "+14155550123"


@pytest.mark.parametrize("severity, expect", [(0, 400), (1, 200), (5, 200), (6, 400), ("3", 400), (2.5, 400)])
def test_severity_is_1_to_5(platform, severity, expect):
    api = owner(platform)
    agent_id = factories.agent(api.actor)
    answer = make(api, expect, title="t", agentId=agent_id, severity=severity)
    if expect == 200:
        assert answer["severity"] == severity
        feedback_id = answer["id"]
        api("PATCH", f"/feedbacks/{feedback_id}", 400, json={"severity": 0})
        api("PATCH", f"/feedbacks/{feedback_id}", 400, json={"severity": 6})
        assert api("PATCH", f"/feedbacks/{feedback_id}", json={"severity": 5})["feedback"]["severity"] == 5
    else:
        assert "severity" in answer["message"]


def test_the_title_is_1_to_200_characters_on_one_line(platform):
    api = owner(platform)
    agent_id = factories.agent(api.actor)
    assert make(api, title="T" * 200, agentId=agent_id)["title"] == "T" * 200
    assert "title" in make(api, 400, title="T" * 201, agentId=agent_id)["message"]
    assert make(api, 400, title="   ", agentId=agent_id)["message"] == \
        "title must be 1 to 200 characters once trimmed; 0 given."
    assert "title" in make(api, 400, title="", agentId=agent_id)["message"]
    assert "title" in make(api, 400, title="a\x00b", agentId=agent_id)["message"]
    assert "title" in make(api, 400, title="a\nb", agentId=agent_id)["message"]
    assert "title" in make(api, 400, agentId=agent_id)["message"]
    feedback_id = make(api, title="T", agentId=agent_id)["id"]
    api("PATCH", f"/feedbacks/{feedback_id}", 400, json={"title": "T" * 201})
    api("PATCH", f"/feedbacks/{feedback_id}", 400, json={"title": "a\x00b"})
    assert api("PATCH", f"/feedbacks/{feedback_id}", json={"title": "U" * 200})["feedback"]["title"] == "U" * 200


def test_the_description_is_up_to_10000_characters_with_line_breaks(platform):
    api = owner(platform)
    agent_id = factories.agent(api.actor)
    assert make(api, title="t", agentId=agent_id, description="d" * 10_000)["description"] == "d" * 10_000
    assert "description" in make(api, 400, title="t", agentId=agent_id, description="d" * 10_001)["message"]
    assert "description" in make(api, 400, title="t", agentId=agent_id, description="a\x00b")["message"]
    assert make(api, title="t", agentId=agent_id, description="a\tb\r\nc")["description"] == "a\tb\r\nc"
    feedback_id = make(api, title="t", agentId=agent_id, description="d")["id"]
    assert api("PATCH", f"/feedbacks/{feedback_id}", json={"description": None})["feedback"]["description"] is None


def test_a_feedback_needs_a_subject_and_a_message_needs_its_call(platform):
    api = owner(platform)
    assert "callId, agentId or workflowId" in make(api, 400, title="t")["message"]
    agent_id = factories.agent(api.actor)
    assert "messageId" in make(api, 400, title="t", agentId=agent_id,
                               messageId="1e2f3a4b-5c6d-4e7f-8a9b-0c1d2e3f4a5b")["message"]
    feedback_id = make(api, title="t", agentId=agent_id)["id"]
    assert "messageId" in api("PATCH", f"/feedbacks/{feedback_id}", 400,
                              json={"messageId": "1e2f3a4b-5c6d-4e7f-8a9b-0c1d2e3f4a5b"})["message"]
    call_feedback = make(api, title="t", callId=factories.call(api.actor))["id"]
    changed = api("PATCH", f"/feedbacks/{call_feedback}", json={"messageId": "1e2f3a4b-5c6d-4e7f-8a9b-0c1d2e3f4a5b"})
    assert changed["feedback"]["messageId"] == "1e2f3a4b-5c6d-4e7f-8a9b-0c1d2e3f4a5b"
    assert api("PATCH", f"/feedbacks/{call_feedback}", json={"messageId": None})["feedback"]["messageId"] is None
    api("PATCH", f"/feedbacks/{call_feedback}", 400, json={})
    api("PATCH", f"/feedbacks/{call_feedback}", 400, json={"number": 7})


def test_an_unknown_status_is_refused_naming_the_allowed_ones(platform):
    api = owner(platform)
    agent_id = factories.agent(api.actor)
    message = make(api, 400, title="t", agentId=agent_id, status="closed")["message"]
    assert message == ("status must be one of this workspace's feedback statuses: open, in_progress, resolved, "
                       "wont_fix; 'closed' is not.")
    feedback_id = make(api, title="t", agentId=agent_id, status="in_progress")["id"]
    assert api("PATCH", f"/feedbacks/{feedback_id}", 400, json={"status": "closed"})["message"] == message
    assert "status" in api("PATCH", f"/feedbacks/{feedback_id}", 400, json={"status": "Open"})["message"]
    listing = api("GET", "/feedbacks", 400, status="open,closed,gone")["message"]
    assert listing == ("status must list this workspace's feedback statuses: open, in_progress, resolved, wont_fix; "
                       "'closed', 'gone' are not.")


def test_a_status_that_counts_as_resolved_resolves_and_another_reopens(platform):
    api = owner(platform)
    feedback_id = make(api, title="t", agentId=factories.agent(api.actor))["id"]
    resolved = api("PATCH", f"/feedbacks/{feedback_id}", json={"status": "resolved"})["feedback"]
    assert resolved["resolved"] is True and resolved["resolvedBy"] == api.actor.user_id
    assert resolved["resolvedAt"] is not None and resolved["resolvedByName"]
    # Between resolved statuses, when and by whom it was resolved stays.
    wont_fix = api("PATCH", f"/feedbacks/{feedback_id}", json={"status": "wont_fix"})["feedback"]
    assert wont_fix["resolved"] is True and wont_fix["resolvedAt"] == resolved["resolvedAt"]
    reopened = api("PATCH", f"/feedbacks/{feedback_id}", json={"status": "in_progress"})["feedback"]
    assert (reopened["resolved"], reopened["resolvedAt"], reopened["resolvedBy"], reopened["resolvedByName"]) == \
        (False, None, None, None)
    assert make(api, title="t", agentId=factories.agent(api.actor), status="wont_fix")["resolved"] is True


def test_resolve_and_reopen_move_between_the_sides_and_refuse_a_second_time(platform):
    api = owner(platform)
    feedback_id = make(api, title="t", agentId=factories.agent(api.actor))["id"]
    api("POST", f"/feedbacks/{feedback_id}/reopen", 409)
    resolved = api("POST", f"/feedbacks/{feedback_id}/resolve")["feedback"]
    assert (resolved["status"], resolved["resolved"], resolved["resolvedBy"]) == ("resolved", True, api.actor.user_id)
    conflict = api("POST", f"/feedbacks/{feedback_id}/resolve", 409)
    assert conflict["message"] == "Feedback #1 is resolved already (status 'resolved'): reopen it first."
    assert api("POST", f"/feedbacks/{feedback_id}/reopen")["feedback"]["status"] == "open"
    assert "not resolved" in api("POST", f"/feedbacks/{feedback_id}/reopen", 409)["message"]
    # A status of the wrong side is 400, one outside the workspace's too.
    assert "counts as resolved" in api("POST", f"/feedbacks/{feedback_id}/resolve", 400,
                                       json={"status": "in_progress"})["message"]
    assert "closed" in api("POST", f"/feedbacks/{feedback_id}/resolve", 400, json={"status": "closed"})["message"]
    assert api("POST", f"/feedbacks/{feedback_id}/resolve", json={"status": "wont_fix"})["feedback"]["status"] == \
        "wont_fix"
    assert "does not count" in api("POST", f"/feedbacks/{feedback_id}/reopen", 400,
                                   json={"status": "resolved"})["message"]
    assert api("POST", f"/feedbacks/{feedback_id}/reopen", json={"status": "in_progress"})["feedback"]["status"] == \
        "in_progress"


def test_archiving_hides_from_the_list_and_is_idempotent(platform):
    api = owner(platform)
    agent_id = factories.agent(api.actor)
    first, second = (make(api, title=t, agentId=agent_id)["id"] for t in ("a", "b"))
    archived = api("POST", f"/feedbacks/{first}/archive")["feedback"]
    assert archived["isArchived"] is True
    assert api("POST", f"/feedbacks/{first}/archive")["feedback"]["isArchived"] is True
    assert listed(api) == [2]
    assert listed(api, archived="false") == [2]
    assert listed(api, archived="true") == [1]
    assert api("GET", "/feedbacks")["pagination"]["total"] == 1
    assert api("POST", f"/feedbacks/{first}/unarchive")["feedback"]["isArchived"] is False
    assert api("POST", f"/feedbacks/{first}/unarchive")["feedback"]["isArchived"] is False
    assert listed(api) == [2, 1]
    assert second


def test_deleting_takes_its_assignees_and_comments_and_the_number_is_not_reused(platform):
    api = owner(platform)
    agent_id = factories.agent(api.actor)
    feedback_id = make(api, title="a", agentId=agent_id)["id"]
    factories.assignee(api.actor, feedback_id, api.actor.user_id)
    factories.comment(api.actor, feedback_id)
    assert api("DELETE", f"/feedbacks/{feedback_id}") == {"id": feedback_id, "deleted": True}
    api("GET", f"/feedbacks/{feedback_id}", 404)
    api("DELETE", f"/feedbacks/{feedback_id}", 404)
    api("GET", f"/feedbacks/{feedback_id}/comments", 404)
    assert make(api, title="b", agentId=agent_id)["number"] == 2


def test_another_workspace_s_ids_are_unknown(platform):
    api, other = owner(platform), owner(platform)
    their_agent = factories.agent(other.actor)
    their_call = factories.call(other.actor, agent_id=their_agent)
    their_workflow = factories.workflow(other.actor, [their_agent])
    theirs = make(other, title="theirs", agentId=their_agent)["id"]
    for field, value in (("agentId", their_agent), ("callId", their_call), ("workflowId", their_workflow)):
        assert value in make(api, 404, title="t", **{field: value})["message"]
    for method, path, body in (("GET", "", None), ("PATCH", "", {"severity": 1}), ("DELETE", "", None),
                               ("POST", "/archive", None), ("POST", "/unarchive", None), ("POST", "/resolve", None),
                               ("POST", "/reopen", None), ("GET", "/assignees", None),
                               ("POST", "/assignees", {"userId": api.actor.user_id}),
                               ("DELETE", f"/assignees/{other.actor.user_id}", None), ("GET", "/comments", None),
                               ("POST", "/comments", {"body": "hi"})):
        api(method, f"/feedbacks/{theirs}{path}", 404, json=body)
        api(method, f"/feedbacks/{UNKNOWN}{path}", 404, json=body)
    # As filters, their ids find nothing.
    mine = make(api, title="mine", agentId=factories.agent(api.actor))
    for name, value in (("agentId", their_agent), ("callId", their_call), ("workflowId", their_workflow),
                        ("assigneeId", other.actor.user_id)):
        assert listed(api, **{name: value}) == []
    assert listed(api) == [mine["number"]]
    assert other("GET", f"/feedbacks/{theirs}")["feedback"]["severity"] == 3


# --- the list -----------------------------------------------------------------------------------

@pytest.fixture
def catalogue(platform):
    """Six feedbacks of varied kinds (numbers 1 to 6) and another workspace's, with what each has."""
    api = owner(platform)
    actor = api.actor
    colleague = platform.member(actor, "member")
    front, back = factories.agent(actor, name="Front"), factories.agent(actor, name="Back")
    workflow_id = factories.workflow(actor, [front])
    call_id = factories.call(actor, agent_id=front)
    specs = [dict(title="Greets in the wrong language", agentId=front, severity=1),
             dict(title="Never confirms the booking", callId=call_id, severity=5, status="in_progress",
                  description="The date is NOT read back."),
             dict(title="Hangs up early", agentId=back, severity=3, status="resolved"),
             dict(title="Loops", workflowId=workflow_id, severity=4),
             dict(title="Spells 100% wrong", agentId=back, severity=2, status="wont_fix"),
             dict(title="Talks over the caller", agentId=front, severity=5)]
    ids = [make(api, **spec)["id"] for spec in specs]
    factories.assignee(actor, ids[0], colleague.user_id)
    factories.assignee(actor, ids[3], colleague.user_id)
    factories.assignee(actor, ids[3], actor.user_id)
    start = utcnow() - timedelta(hours=6)
    with session():  # the moments of creation an hour apart, of the last change in the reverse order
        for hours, feedback_id in enumerate(ids):
            Feedback.update(created_at=start + timedelta(hours=hours),
                            updated_at=start + timedelta(hours=12 - hours)).where(Feedback.id == feedback_id).execute()
    stranger = owner(platform)
    make(stranger, title="Loops elsewhere", agentId=factories.agent(stranger.actor), severity=5)
    return api, dict(front=front, back=back, workflow=workflow_id, call=call_id, colleague=colleague.user_id,
                     start=start, ids=ids)


def test_the_list_is_newest_first_with_each_feedback_whole(catalogue):
    api, _ = catalogue
    page = api("GET", "/feedbacks")
    assert [f["number"] for f in page["feedbacks"]] == [6, 5, 4, 3, 2, 1]
    assert page["pagination"] == {"total": 6, "limit": 20, "offset": 0}
    for item in page["feedbacks"]:
        assert item == api("GET", f"/feedbacks/{item['id']}")["feedback"]
    page = api("GET", "/feedbacks", limit=2, offset=2)
    assert [f["number"] for f in page["feedbacks"]] == [4, 3] and page["pagination"]["total"] == 6
    past = api("GET", "/feedbacks", offset=10)
    assert past == {"feedbacks": [], "pagination": {"total": 6, "limit": 20, "offset": 10}}


@pytest.mark.parametrize("params, expected", [
    ({"status": "open"}, [6, 4, 1]),
    ({"status": "in_progress,wont_fix"}, [5, 2]),
    ({"severity": "5"}, [6, 2]),
    ({"severity": "1,2,4"}, [5, 4, 1]),
    ({"minSeverity": "4"}, [6, 4, 2]),
    ({"minSeverity": "1"}, [6, 5, 4, 3, 2, 1]),
    ({"resolved": "true"}, [5, 3]),
    ({"resolved": "false"}, [6, 4, 2, 1]),
    ({"q": "BOOKING"}, [2]),
    ({"q": "not read"}, [2]),
    ({"q": "100%"}, [5]),
    ({"q": "%"}, [5]),
    ({"q": "_"}, []),
    ({"status": "open", "minSeverity": "4"}, [6, 4]),
])
def test_each_filter_keeps_what_it_says(catalogue, params, expected):
    api, _ = catalogue
    assert listed(api, **params) == expected
    assert api("GET", "/feedbacks", **params)["pagination"]["total"] == len(expected)


def test_filters_by_what_it_is_about_and_by_assignee(catalogue):
    api, known = catalogue
    assert listed(api, agentId=known["front"]) == [6, 2, 1]  # the call's feedback takes the call's agent
    assert listed(api, agentId=known["back"]) == [5, 3]
    assert listed(api, workflowId=known["workflow"]) == [4]
    assert listed(api, callId=known["call"]) == [2]
    assert listed(api, assigneeId=known["colleague"]) == [4, 1]
    assert listed(api, assigneeId=api.actor.user_id) == [4]
    assert listed(api, assigneeId=UNKNOWN) == []
    assert listed(api, agentId=known["front"], minSeverity="5") == [6, 2]


def test_the_created_range_is_since_inclusive_until_exclusive(catalogue):
    api, known = catalogue
    start = known["start"]

    def at(hours: float) -> str:
        return (start + timedelta(hours=hours)).isoformat() + "Z"
    assert listed(api, since=at(2)) == [6, 5, 4, 3]
    assert listed(api, until=at(2)) == [2, 1]
    assert listed(api, since=at(1), until=at(3)) == [3, 2]
    assert "until" in api("GET", "/feedbacks", 400, since=at(3), until=at(1))["message"]
    assert "until" in api("GET", "/feedbacks", 400, since=at(1), until=at(1))["message"]
    # The same moment two hours east.
    assert listed(api, since=(start + timedelta(hours=4)).isoformat() + "+02:00") == [6, 5, 4, 3]
    assert "since" in api("GET", "/feedbacks", 400, since=start.isoformat())["message"]  # no offset


@pytest.mark.parametrize("sort, order, expected", [
    ("createdAt", "desc", [6, 5, 4, 3, 2, 1]),
    ("createdAt", "asc", [1, 2, 3, 4, 5, 6]),
    ("updatedAt", "desc", [1, 2, 3, 4, 5, 6]),
    ("updatedAt", "asc", [6, 5, 4, 3, 2, 1]),
    ("severity", "desc", [6, 2, 4, 3, 5, 1]),
    ("severity", "asc", [1, 5, 3, 4, 2, 6]),
    ("number", "asc", [1, 2, 3, 4, 5, 6]),
    ("number", "desc", [6, 5, 4, 3, 2, 1]),
    ("status", "asc", [2, 1, 4, 6, 3, 5]),
    ("status", "desc", [5, 3, 6, 4, 1, 2]),
])
def test_each_sort_orders_as_it_says(catalogue, sort, order, expected):
    api, _ = catalogue
    assert listed(api, sortBy=sort, sortOrder=order) == expected


def test_malformed_filters_are_refused_naming_them(catalogue):
    api, _ = catalogue
    for params in ({"severity": "0"}, {"severity": "6"}, {"severity": "1,,2"}, {"minSeverity": "0"},
                   {"minSeverity": "6"}, {"sortBy": "title"}, {"sortOrder": "up"}, {"resolved": "maybe"},
                   {"agentId": "not-a-uuid"}, {"q": "a\x00b"}, {"q": "q" * 201}, {"status": "Open"},
                   {"limit": "0"}, {"limit": "101"}, {"offset": "-1"}):
        api("GET", "/feedbacks", 400, **params)
    assert "not both" in api("GET", "/feedbacks", 400, severity="5", minSeverity="4")["message"]
    assert listed(api, q="q" * 200) == []
