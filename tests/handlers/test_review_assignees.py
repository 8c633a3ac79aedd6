"""Who reviews a review, over HTTP: members only, first assigned first (the review's assignedTo),
assigning twice changes nothing, at most 20, removal, another workspace's review and users, and
twenty adds of one member at once."""
from __future__ import annotations

import uuid

from tests.support import factories
from tests.support.client import Api, owner
from tests.support.threads import run_threads


def assign(api: Api, review_id: str, user_id: str, expect: int = 200) -> dict:
    return api("POST", f"/reviews/{review_id}/assignees", expect, json={"userId": user_id})


def listed(api: Api, review_id: str) -> list[dict]:
    return api("GET", f"/reviews/{review_id}/assignees")["assignees"]


def test_members_are_assigned_listed_first_first_and_removed(platform):
    api = owner(platform)
    review_id = factories.review(api.actor)
    member = factories.member(api.actor, "member")
    first = assign(api, review_id, api.actor.user_id)
    assert first["assignee"]["userId"] == api.actor.user_id and first["assignee"]["userName"] == "Owner"
    second = assign(api, review_id, member.user_id)
    assert second["assignee"] == {"userId": member.user_id, "assignedAt": second["assignee"]["assignedAt"],
                                  "userName": member.email}
    review = second["review"]
    assert review["assignedTo"] == api.actor.user_id
    assert [a["userId"] for a in review["assignees"]] == [api.actor.user_id, member.user_id]
    assert listed(api, review_id) == review["assignees"]
    assert api("GET", f"/reviews/{review_id}")["review"]["assignees"] == review["assignees"]
    assert api("GET", "/reviews")["reviews"][0]["assignees"] == review["assignees"]
    assert api("DELETE", f"/reviews/{review_id}/assignees/{api.actor.user_id}") == \
        {"id": api.actor.user_id, "deleted": True}
    assert api("GET", f"/reviews/{review_id}")["review"]["assignedTo"] == member.user_id
    assert api("DELETE", f"/reviews/{review_id}/assignees/{api.actor.user_id}", 404)["message"] == \
        f"User {api.actor.user_id} is not assigned to review {review_id}."


def test_assigning_one_assigned_already_changes_nothing(platform):
    api = owner(platform)
    review_id = factories.review(api.actor)
    made = assign(api, review_id, api.actor.user_id)["assignee"]
    assert assign(api, review_id, api.actor.user_id)["assignee"] == made
    assert listed(api, review_id) == [made]


def test_only_members_of_the_workspace_are_assigned(platform):
    api = owner(platform)
    review_id = factories.review(api.actor)
    stranger = platform.workspace("other")
    for user_id in (stranger.user_id, str(uuid.uuid4())):
        assert assign(api, review_id, user_id, 404)["message"] == (
            f"userId: user {user_id} is not a member of this workspace; work is assigned to members only.")
    assert listed(api, review_id) == []


def test_a_review_has_at_most_20_assignees(platform):
    api = owner(platform)
    review_id = factories.review(api.actor)
    members = [factories.member(api.actor, "viewer") for _ in range(21)]
    for member in members[:20]:
        assign(api, review_id, member.user_id)
    assert assign(api, review_id, members[20].user_id, 409)["message"] == \
        "A review has at most 20 assignees; remove one first."
    assign(api, review_id, members[0].user_id)  # one it has is no 21st
    api("DELETE", f"/reviews/{review_id}/assignees/{members[0].user_id}")
    assign(api, review_id, members[20].user_id)
    assert len(listed(api, review_id)) == 20


def test_another_workspaces_review_is_404(platform):
    mine, theirs = owner(platform), owner(platform)
    review_id = factories.review(theirs.actor)
    assign(theirs, review_id, theirs.actor.user_id)
    message = f"No review {review_id} in this workspace."
    assert mine("GET", f"/reviews/{review_id}/assignees", 404)["message"] == message
    assert assign(mine, review_id, mine.actor.user_id, 404)["message"] == message
    assert mine("DELETE", f"/reviews/{review_id}/assignees/{theirs.actor.user_id}", 404)["message"] == message
    assert [a["userId"] for a in listed(theirs, review_id)] == [theirs.actor.user_id]


def test_twenty_adds_of_one_member_at_once_make_one_assignee(platform):
    api = owner(platform)
    review_id = factories.review(api.actor)
    member = factories.member(api.actor, "member")

    def post(_index: int) -> int:
        return platform.client.post(f"/api/v2/reviews/{review_id}/assignees", json={"userId": member.user_id},
                                    headers=api.actor.headers,
                                    params={"workspaceId": api.actor.workspace_id}).status_code

    assert run_threads(20, post) == [200] * 20
    assert [a["userId"] for a in listed(api, review_id)] == [member.user_id]


def test_twenty_threads_assigning_one_member_through_the_domain_leave_one_row(platform):
    """Each thread with a connection and a transaction of its own, as twenty server processes would."""
    from models.kernel.db import database, is_postgres, session
    from models.reviews import assignees
    from models.reviews.tables import ReviewAssignee
    api = owner(platform)
    review_id = factories.review(api.actor)
    member = factories.member(api.actor, "member")

    def add_one(_index: int) -> str:
        try:
            with session(), database.atomic():
                return assignees.add(factories.principal(api.actor), workspace_id=api.actor.workspace_id,
                                     review_id=review_id, user_id=member.user_id).user_id
        finally:
            if not is_postgres():
                database.close()

    assert run_threads(20, add_one) == [member.user_id] * 20
    with session():
        assert ReviewAssignee.in_workspace(api.actor.workspace_id).where(
            ReviewAssignee.review == review_id).count() == 1
