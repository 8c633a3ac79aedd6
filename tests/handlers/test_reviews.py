"""Reviews over HTTP: a review of a call with its rubric, its bounds and just past them, scores within
each criterion's range, every status move (legal and not), done needing every score, completedAt
set and cleared, a done review's scores and rubric frozen until reopened, the list's filters and
order, feedback raised from a done review (once), another workspace's ids, and twenty raises at once."""
from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import pytest

from tests.support import factories
from tests.support.client import Api, owner
from tests.support.factories.reviews import RUBRIC
from tests.support.threads import run_threads

FULL = {"Accuracy": 2, "Tone": 7}


def create(api: Api, expect: int = 200, **body) -> dict:
    body.setdefault("targetType", "call")
    if "targetId" not in body:
        body["targetId"] = factories.call(api.actor)
    body.setdefault("rubric", RUBRIC)
    result = api("POST", "/reviews", expect, json=body)
    return result["review"] if expect == 200 else result


def patch(api: Api, review_id: str, expect: int = 200, **body) -> dict:
    result = api("PATCH", f"/reviews/{review_id}", expect, json=body)
    return result["review"] if expect == 200 else result


def test_a_review_is_created_read_listed_updated_and_deleted(platform):
    api = owner(platform)
    call_id = factories.call(api.actor)
    made = create(api, targetId=call_id, title=" Booking call ")
    assert made == {**made, "targetType": "call", "targetId": call_id, "title": "Booking call", "scores": {},
                    "notes": None, "status": "pending", "feedbackId": None, "assignedTo": None, "assignees": [],
                    "createdBy": api.actor.user_id, "completedAt": None, "completedBy": None,
                    "workspaceId": api.actor.workspace_id}
    assert made["rubric"] == [{**RUBRIC[0]}, {**RUBRIC[1], "description": None}]
    assert api("GET", f"/reviews/{made['id']}")["review"] == made
    assert api("GET", "/reviews") == {"reviews": [made], "pagination": {"total": 1, "limit": 20, "offset": 0}}
    updated = patch(api, made["id"], title="Booking call (2)", notes="Line one\nline two", scores={"Accuracy": 3})
    assert (updated["title"], updated["notes"], updated["scores"]) == ("Booking call (2)", "Line one\nline two",
                                                                        {"Accuracy": 3})
    assert updated["updatedAt"] >= made["updatedAt"]
    cleared = patch(api, made["id"], title=None, notes=None, scores={"Accuracy": None})
    assert (cleared["title"], cleared["notes"], cleared["scores"]) == (None, None, {})
    assert api("DELETE", f"/reviews/{made['id']}") == {"id": made["id"], "deleted": True}
    api("GET", f"/reviews/{made['id']}", 404)
    api("DELETE", f"/reviews/{made['id']}", 404)


def test_the_target_is_a_call_of_the_workspace(platform):
    api = owner(platform)
    unknown = str(uuid.uuid4())
    assert create(api, 404, targetId=unknown)["message"] == f"No call {unknown} in this workspace."
    foreign = factories.call(platform.workspace("other"))
    assert create(api, 404, targetId=foreign)["message"] == f"No call {foreign} in this workspace."
    # Simulation iterations come with the simulations group.
    assert "targetType" in create(api, 400, targetType="simulation_iteration")["message"]
    assert api("GET", "/reviews")["pagination"]["total"] == 0


def _criteria(count: int) -> list[dict]:
    return [{"name": f"c{i}", "min": 0, "max": 1} for i in range(count)]


@pytest.mark.parametrize("rubric, ok", [
    (_criteria(1), True), (_criteria(20), True), ([], False), (_criteria(21), False),
    ([{"name": "N" * 60, "min": 0, "max": 1}], True), ([{"name": "N" * 61, "min": 0, "max": 1}], False),
    ([{"name": "", "min": 0, "max": 1}], False),
    ([{"name": "a", "description": "D" * 500, "min": 0, "max": 1}], True),
    ([{"name": "a", "description": "D" * 501, "min": 0, "max": 1}], False),
    ([{"name": "a", "min": 1, "max": 2}], True), ([{"name": "a", "min": 1, "max": 1}], False),
    ([{"name": "a", "min": 2, "max": 1}], False),
    ([{"name": "a", "min": -1_000_000, "max": 1_000_000}], True),
    ([{"name": "a", "min": -1_000_001, "max": 0}], False), ([{"name": "a", "min": 0, "max": 1_000_001}], False),
    ([{"name": "a", "min": 0.5, "max": 1}], False), ([{"name": "a", "min": 0}], False),
    ([{"name": "a", "min": 0, "max": 1, "weight": 2}], False),
])
def test_the_rubric_has_1_to_20_named_criteria_each_with_an_integer_range(platform, rubric, ok):
    api = owner(platform)
    if ok:
        assert [c["name"] for c in create(api, rubric=rubric)["rubric"]] == [c["name"] for c in rubric]
    else:
        assert "rubric" in create(api, 400, rubric=rubric)["message"]


def test_criteria_names_are_trimmed_and_unique_without_regard_to_case(platform):
    api = owner(platform)
    message = create(api, 400, rubric=[{"name": "Tone", "min": 0, "max": 1}, {"name": " tone ", "min": 0, "max": 1}])
    assert message["message"] == ("rubric names the criterion 'tone' twice (rubric[1] and rubric[0]); names are "
                                  "unique without regard to case.")
    assert create(api, 400, rubric=[{"name": "   ", "min": 0, "max": 1}])["message"] == \
        "rubric[0].name must be 1 to 60 characters once trimmed; 0 given."


def test_scores_lie_within_each_criterions_range_and_name_a_criterion(platform):
    api = owner(platform)
    review_id = create(api)["id"]
    assert patch(api, review_id, scores={"Accuracy": 1, "Tone": 10})["scores"] == {"Accuracy": 1, "Tone": 10}
    assert patch(api, review_id, scores={"Accuracy": 5, "Tone": 0})["scores"] == {"Accuracy": 5, "Tone": 0}
    assert patch(api, review_id, 400, scores={"Accuracy": 6})["message"] == \
        "scores.Accuracy must be an integer from 1 to 5; 6 given."
    assert patch(api, review_id, 400, scores={"Accuracy": 0})["message"] == \
        "scores.Accuracy must be an integer from 1 to 5; 0 given."
    assert patch(api, review_id, 400, scores={"Tone": -1})["message"] == \
        "scores.Tone must be an integer from 0 to 10; -1 given."
    assert patch(api, review_id, 400, scores={"Empathy": 3})["message"] == \
        "scores names 'Empathy', no criterion of the rubric (its criteria: Accuracy, Tone)."
    assert "scores" in patch(api, review_id, 400, scores={"Tone": 2.5})["message"]
    assert "scores" in patch(api, review_id, 400, scores={"Tone": "3"})["message"]
    # Nothing of a refused request is applied: the scores stand as they were.
    patch(api, review_id, 400, scores={"Accuracy": 3, "Tone": 11})
    assert api("GET", f"/reviews/{review_id}")["review"]["scores"] == {"Accuracy": 5, "Tone": 0}


def test_notes_are_up_to_10000_characters(platform):
    api = owner(platform)
    review_id = create(api)["id"]
    assert len(patch(api, review_id, notes="n" * 10_000)["notes"]) == 10_000
    assert "notes" in patch(api, review_id, 400, notes="n" * 10_001)["message"]
    assert "notes" in patch(api, review_id, 400, notes="bad\x00")["message"]
    patch(api, review_id, 400)  # an empty change


@pytest.mark.parametrize("start, target, legal", [
    ("pending", "in_review", True), ("pending", "done", True), ("in_review", "done", True),
    ("in_review", "pending", True), ("done", "in_review", True), ("done", "pending", False),
])
def test_the_status_moves(platform, start, target, legal):
    api = owner(platform)
    review_id = factories.review(api.actor, scores=FULL, status=None if start == "pending" else start)
    if legal:
        assert patch(api, review_id, status=target)["status"] == target
    else:
        assert patch(api, review_id, 409, status=target)["message"] == \
            "A review cannot move from done to pending: from done it moves to in_review."
        assert api("GET", f"/reviews/{review_id}")["review"]["status"] == "done"


def test_the_same_status_again_changes_nothing(platform):
    api = owner(platform)
    review_id = create(api)["id"]
    assert patch(api, review_id, status="pending")["status"] == "pending"


def test_done_needs_every_criterion_scored_and_records_who_and_when_until_reopened(platform):
    api = owner(platform)
    review_id = create(api, rubric=[*RUBRIC, {"name": "Empathy", "min": 0, "max": 3}])["id"]
    assert patch(api, review_id, 409, status="done")["message"] == \
        "A review is done once every criterion is scored; not scored: Accuracy, Tone, Empathy."
    patch(api, review_id, status="in_review", scores={"Accuracy": 4})
    assert patch(api, review_id, 409, status="done", scores={"Tone": 5})["message"] == \
        "A review is done once every criterion is scored; not scored: Empathy."
    assert api("GET", f"/reviews/{review_id}")["review"]["scores"] == {"Accuracy": 4}  # the request had no effect
    done = patch(api, review_id, status="done", scores={"Tone": 5, "Empathy": 0})
    assert done["status"] == "done" and done["completedBy"] == api.actor.user_id and done["completedAt"]
    assert done["scores"] == {"Accuracy": 4, "Tone": 5, "Empathy": 0}
    reopened = patch(api, review_id, status="in_review")
    assert (reopened["completedAt"], reopened["completedBy"]) == (None, None)
    # A score removed while reopened keeps it from being done again.
    patch(api, review_id, scores={"Empathy": None})
    assert patch(api, review_id, 409, status="done")["message"].endswith("not scored: Empathy.")


def test_a_done_reviews_scores_and_rubric_change_only_once_reopened(platform):
    api = owner(platform)
    review_id = factories.done_review(api.actor)
    assert patch(api, review_id, 409, scores={"Accuracy": 3})["message"] == \
        "A done review's scores cannot change; reopen it first (status in_review)."
    assert patch(api, review_id, 409, scores={"Accuracy": 3}, status="done")["message"].startswith("A done review's")
    assert patch(api, review_id, 409, rubric=_criteria(1))["message"] == \
        "The rubric changes only while the review is pending and unscored; it is done."
    # Its title and notes may change while done.
    assert patch(api, review_id, notes="Late note")["status"] == "done"
    # Reopening and rescoring in one request.
    reopened = patch(api, review_id, status="in_review", scores={"Accuracy": 3})
    assert reopened["status"] == "in_review" and reopened["scores"] == {"Accuracy": 3, "Tone": 7}


def test_the_rubric_changes_only_while_pending_and_unscored(platform):
    api = owner(platform)
    review_id = create(api)["id"]
    changed = patch(api, review_id, rubric=[{"name": "Empathy", "min": 0, "max": 3}], scores={"Empathy": 2})
    assert [c["name"] for c in changed["rubric"]] == ["Empathy"] and changed["scores"] == {"Empathy": 2}
    assert patch(api, review_id, 409, rubric=RUBRIC)["message"] == \
        "The rubric changes only while the review is pending and unscored; it is scored."
    other = create(api)["id"]
    patch(api, other, status="in_review")
    assert patch(api, other, 409, rubric=_criteria(2))["message"].endswith("it is in_review.")
    assert "rubric" in patch(api, other, 400, rubric=[])["message"]


def test_the_list_filters_and_sorts(platform):
    api = owner(platform)
    member = factories.member(api.actor, "member")
    call_a, call_b = factories.call(api.actor), factories.call(api.actor)
    first = factories.review(api.actor, call_id=call_a)
    second = factories.review(api.actor, call_id=call_b, status="in_review")
    third = factories.done_review(api.actor, call_id=call_a)
    api("POST", f"/reviews/{second}/assignees", json={"userId": member.user_id})
    _created_at(first=first, second=second, third=third)

    def ids(**params) -> list[str]:
        return [r["id"] for r in api("GET", "/reviews", **params)["reviews"]]

    assert ids() == [third, second, first]
    assert ids(sortOrder="asc", sortBy="createdAt") == [first, second, third]
    assert ids(status="pending") == [first]
    assert ids(status="pending,done") == [third, first]
    assert ids(targetId=call_a) == [third, first]
    assert ids(targetType="call", targetId=call_b) == [second]
    assert ids(assigneeId=member.user_id) == [second]
    assert ids(assigneeId=api.actor.user_id) == []
    assert ids(since="2026-11-23T10:00:00Z") == [third, second]
    assert ids(since="2026-11-23T11:00:00+01:00", until="2026-11-23T10:00:00.001Z") == [second]
    assert ids(until="2026-11-23T10:00:00Z") == [first]
    page = api("GET", "/reviews", limit=1, offset=1)
    assert [r["id"] for r in page["reviews"]] == [second] and page["pagination"] == {"total": 3, "limit": 1,
                                                                                      "offset": 1}
    assert api("GET", "/reviews", offset=5)["pagination"] == {"total": 3, "limit": 20, "offset": 5}
    assert "status" in api("GET", "/reviews", 400, status="closed")["message"]
    assert api("GET", "/reviews", 400, since="2026-01-02T00:00:00Z", until="2026-01-01T00:00:00Z")["message"] == \
        "until must be later than since."
    assert "since" in api("GET", "/reviews", 400, since="2026-01-02T00:00:00")["message"]


def _created_at(**reviews: str) -> None:
    """The reviews made a minute apart, from 09:59 on 2026-11-23 (UTC), in the order given."""
    from models.kernel.db import session
    from models.reviews.tables import Review
    with session():
        for minutes, review_id in enumerate(reviews.values()):
            Review.update(created_at=datetime(2026, 11, 23, 9, 59) + timedelta(minutes=minutes)).where(
                Review.id == review_id).execute()


def test_feedback_is_raised_once_from_a_done_review(platform):
    api = owner(platform)
    agent_id = factories.agent(api.actor)
    call_id = factories.call(api.actor, agent_id=agent_id)
    review_id = factories.review(api.actor, call_id=call_id, scores=FULL, title="Booking call")
    path = f"/reviews/{review_id}/feedback"
    assert api("POST", path, 409, json={"title": "Wrong date"})["message"] == \
        "Feedback is raised from a done review; this one is pending."
    patch(api, review_id, status="done")
    raised = api("POST", path, json={"title": " Wrong date ", "description": "Said Monday.\nIt was Tuesday.",
                                     "severity": 5})
    feedback, review = raised["feedback"], raised["review"]
    assert (feedback["title"], feedback["description"], feedback["severity"], feedback["createdBy"]) == \
        ("Wrong date", "Said Monday.\nIt was Tuesday.", 5, "review")
    assert (feedback["callId"], feedback["agentId"], feedback["authorId"]) == (call_id, agent_id, api.actor.user_id)
    assert review["feedbackId"] == feedback["id"] and review["status"] == "done"
    assert api("GET", f"/reviews/{review_id}")["review"] == review
    assert api("POST", path, 409, json={"title": "Again"})["message"] == \
        f"This review raised feedback {feedback['id']} already."
    references = api("GET", f"/feedbacks/{feedback['id']}/references")["references"]
    assert {(r["entityType"], r["entityId"], r["relation"]) for r in references} == {
        ("call", call_id, "source"), ("review", review_id, "source")}
    # Its default severity is the feedback's.
    other = factories.done_review(api.actor)
    assert api("POST", f"/reviews/{other}/feedback", json={"title": "Slow"})["feedback"]["severity"] == 3


@pytest.mark.parametrize("body, field", [({"title": ""}, "title"), ({"title": "T" * 201}, "title"),
                                         ({"title": "t", "severity": 6}, "severity"),
                                         ({"title": "t", "severity": 0}, "severity"), ({}, "title")])
def test_raised_feedback_follows_the_feedbacks_rules(platform, body, field):
    api = owner(platform)
    review_id = factories.done_review(api.actor)
    assert field in api("POST", f"/reviews/{review_id}/feedback", 400, json=body)["message"]
    assert api("GET", f"/reviews/{review_id}")["review"]["feedbackId"] is None


def test_another_workspaces_review_is_404(platform):
    mine, theirs = owner(platform), owner(platform)
    review_id = factories.done_review(theirs.actor, title="theirs")
    message = f"No review {review_id} in this workspace."
    assert mine("GET", f"/reviews/{review_id}", 404)["message"] == message
    assert patch(mine, review_id, 404, notes="mine")["message"] == message
    assert mine("POST", f"/reviews/{review_id}/feedback", 404, json={"title": "t"})["message"] == message
    assert mine("DELETE", f"/reviews/{review_id}", 404)["message"] == message
    assert mine("GET", "/reviews")["reviews"] == []
    assert theirs("GET", f"/reviews/{review_id}")["review"]["notes"] is None


def test_twenty_raises_at_once_make_one_feedback(platform):
    api = owner(platform)
    review_id = factories.done_review(api.actor)

    def post(index: int) -> int:
        return platform.client.post(f"/api/v2/reviews/{review_id}/feedback", json={"title": f"t{index}"},
                                    headers=api.actor.headers,
                                    params={"workspaceId": api.actor.workspace_id}).status_code

    statuses = run_threads(20, post)
    assert sorted(statuses) == [200] + [409] * 19, statuses
    feedback_id = api("GET", f"/reviews/{review_id}")["review"]["feedbackId"]
    references = api("GET", f"/feedbacks/{feedback_id}/references")["references"]
    assert [r["entityType"] for r in references] == ["call", "review"]


def test_twenty_moves_at_once_leave_a_consistent_review(platform):
    api = owner(platform)
    review_id = factories.review(api.actor, scores=FULL, status="in_review")

    def move(index: int) -> int:
        return platform.client.patch(f"/api/v2/reviews/{review_id}", headers=api.actor.headers,
                                     json={"status": "done" if index % 2 else "in_review"},
                                     params={"workspaceId": api.actor.workspace_id}).status_code

    assert set(run_threads(20, move)) <= {200}
    review = api("GET", f"/reviews/{review_id}")["review"]
    assert (review["completedAt"] is None) == (review["status"] != "done")
