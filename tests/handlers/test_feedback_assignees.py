"""A feedback's assignees over HTTP: members only (another workspace's user or no user is 404
naming it), first assigned first and the first as assignedTo, assigning twice is one assignment
(also from 20 requests at once), unassigning, paging, and feedbacks:assign."""
from __future__ import annotations

from models.feedback import assignees
from models.feedback.tables import FeedbackAssignee
from models.kernel.db import database, is_postgres, session, unit_of_work
from tests.support import factories
from tests.support.client import Api, owner
from tests.support.threads import run_threads

UNKNOWN = "0f0e0d0c-0b0a-4908-8706-050403020100"


def test_members_are_assigned_first_first_and_unassigned(platform):
    api = owner(platform)
    feedback_id = factories.feedback(api.actor, agent_id=factories.agent(api.actor))
    colleague = platform.member(api.actor, "member")
    added = api("POST", f"/feedbacks/{feedback_id}/assignees", json={"userId": colleague.user_id})
    assert added["assignee"]["userId"] == colleague.user_id and added["assignee"]["userName"] == colleague.email
    assert added["feedback"]["assignedTo"] == colleague.user_id
    second = api("POST", f"/feedbacks/{feedback_id}/assignees", json={"userId": api.actor.user_id})
    assert [a["userId"] for a in second["feedback"]["assignees"]] == [colleague.user_id, api.actor.user_id]
    assert second["feedback"]["assignedTo"] == colleague.user_id
    listed = api("GET", f"/feedbacks/{feedback_id}/assignees")
    assert listed["assignees"] == second["feedback"]["assignees"]
    assert listed["pagination"] == {"total": 2, "limit": 20, "offset": 0}
    page = api("GET", f"/feedbacks/{feedback_id}/assignees", limit=1, offset=1)
    assert [a["userId"] for a in page["assignees"]] == [api.actor.user_id] and page["pagination"]["total"] == 2
    assert api("DELETE", f"/feedbacks/{feedback_id}/assignees/{colleague.user_id}") == \
        {"id": colleague.user_id, "deleted": True}
    assert api("GET", f"/feedbacks/{feedback_id}")["feedback"]["assignedTo"] == api.actor.user_id
    message = api("DELETE", f"/feedbacks/{feedback_id}/assignees/{colleague.user_id}", 404)["message"]
    assert colleague.user_id in message and "not assigned" in message


def test_assigning_someone_assigned_already_keeps_the_first_assignment(platform):
    api = owner(platform)
    feedback_id = factories.feedback(api.actor, agent_id=factories.agent(api.actor))
    first = api("POST", f"/feedbacks/{feedback_id}/assignees", json={"userId": api.actor.user_id})["assignee"]
    again = api("POST", f"/feedbacks/{feedback_id}/assignees", json={"userId": api.actor.user_id})
    assert again["assignee"] == first and len(again["feedback"]["assignees"]) == 1


def test_only_members_of_the_workspace_are_assigned(platform):
    api, other = owner(platform), owner(platform)
    feedback_id = factories.feedback(api.actor, agent_id=factories.agent(api.actor))
    for user_id in (other.actor.user_id, UNKNOWN):
        message = api("POST", f"/feedbacks/{feedback_id}/assignees", 404, json={"userId": user_id})["message"]
        assert message == f"userId: user {user_id} is not a member of this workspace; work is assigned to members only."
    api("POST", f"/feedbacks/{feedback_id}/assignees", 400, json={"userId": "someone"})
    api("POST", f"/feedbacks/{feedback_id}/assignees", 400, json={})
    assert api("GET", f"/feedbacks/{feedback_id}/assignees")["assignees"] == []
    # Another workspace's feedback is unknown, whoever is named.
    theirs = factories.feedback(other.actor, agent_id=factories.agent(other.actor))
    api("POST", f"/feedbacks/{theirs}/assignees", 404, json={"userId": api.actor.user_id})
    api("GET", f"/feedbacks/{UNKNOWN}/assignees", 404)


def test_assigning_needs_feedbacks_assign(platform):
    api = owner(platform)
    feedback_id = factories.feedback(api.actor, agent_id=factories.agent(api.actor))
    viewer = Api(platform, platform.member(api.actor, "viewer"))
    assert "feedbacks:assign" in viewer("POST", f"/feedbacks/{feedback_id}/assignees", 403,
                                        json={"userId": api.actor.user_id})["message"]
    assert viewer("GET", f"/feedbacks/{feedback_id}/assignees")["assignees"] == []


def test_twenty_concurrent_assignments_of_the_same_member_make_one(platform):
    owner_actor = platform.workspace()
    feedback_id = factories.feedback(owner_actor, agent_id=factories.agent(owner_actor))

    def assign(_index: int) -> str:
        with session(), unit_of_work():
            found = assignees.add(factories.principal(owner_actor), workspace_id=owner_actor.workspace_id,
                                  feedback_id=feedback_id, user_id=owner_actor.user_id)
        if not is_postgres():
            database.close()
        return found.user_id

    assert run_threads(20, assign) == [owner_actor.user_id] * 20
    with session():
        rows = FeedbackAssignee.in_workspace(owner_actor.workspace_id, FeedbackAssignee.id).count()
    assert rows == 1
