"""A feedback's references over HTTP: the list exactly as the spec shapes it (url and label of each
kind), what the actions add (feedback on a call, feedback raised from a review), adding by hand
(existence checked for every kind), a persona's and a simulation's name as their label, the same
entity and relation twice, the bound of 200, removal, another workspace's ids, and twenty adds of
one reference at once."""
from __future__ import annotations

import uuid
from datetime import datetime

import pytest

from models.kernel.db import session
from tests.support import factories
from tests.support.client import Api, owner
from tests.support.threads import run_threads

SPEC_FIELDS = {"id", "feedbackId", "entityType", "entityId", "relation", "createdAt", "url", "label", "createdBy"}


def refs(api: Api, feedback_id: str) -> list[dict]:
    result = api("GET", f"/feedbacks/{feedback_id}/references")
    assert set(result) == {"success", "references"} and result["success"] is True
    return result["references"]


def add(api: Api, feedback_id: str, expect: int = 200, **body) -> dict:
    result = api("POST", f"/feedbacks/{feedback_id}/references", expect, json=body)
    return result["reference"] if expect == 200 else result


def _solution(actor, agent_id: str, title: str) -> str:
    """A solution row of a run: the optimization group makes them; its domain is not needed here."""
    from models.optimization.tables import OptimizationRun, Solution
    with session():
        run = OptimizationRun.create(workspace=actor.workspace_id, agent_id=agent_id, status="pendingReview",
                                     optimizer="builtin", feedback_count=1, solution_count=1,
                                     created_by=actor.user_id)
        return Solution.create(workspace=actor.workspace_id, run=run.id, title=title,
                               change={"path": "prompt", "oldValue": "a", "newValue": "b", "diff": ""},
                               explanation="Shorter.", display_order=0).id


def _version(api: Api, agent_id: str) -> dict:
    return api("GET", f"/versions/agent/{agent_id}")["versions"][0]


def test_the_list_is_the_specs_shape_with_the_url_and_label_of_each_kind(platform):
    api = owner(platform)
    agent_id = factories.agent(api.actor)
    factories.save_versions(api.actor, agent_id, 2)
    version = _version(api, agent_id)
    call_id = factories.call(api.actor, agent_id=agent_id, started_at=datetime(2026, 11, 23, 9, 0, 5))
    feedback_id = factories.feedback(api.actor, call_id=call_id)
    solution_id = _solution(api.actor, agent_id, "Confirm the booking aloud")
    review_id = factories.review(api.actor, call_id=call_id, title="Booking call")
    persona_id = factories.persona(api.actor, "Impatient caller")
    simulation_id = factories.simulation(api.actor, agent_id, name="Booking regression")
    add(api, feedback_id, entityType="version", entityId=version["id"], relation="fixed_by")
    add(api, feedback_id, entityType="solution", entityId=solution_id, relation="proposed_fix")
    add(api, feedback_id, entityType="review", entityId=review_id, relation="related")
    add(api, feedback_id, entityType="persona", entityId=persona_id, relation="reproduces")
    add(api, feedback_id, entityType="simulation", entityId=simulation_id, relation="reproduces")
    listed = refs(api, feedback_id)
    assert all(set(r) == SPEC_FIELDS for r in listed)
    assert [(r["entityType"], r["relation"], r["url"], r["label"]) for r in listed] == [
        ("call", "source", f"/api/v2/call/{call_id}", "Call of 2026-11-23 09:00 UTC"),  # the action's, first
        ("version", "fixed_by", f"/api/v2/versions/agent/{agent_id}/{version['id']}",
         f"Version {version['versionNumber']}"),
        ("solution", "proposed_fix", f"/api/v2/solutions/{solution_id}", "Confirm the booking aloud"),
        ("review", "related", f"/api/v2/reviews/{review_id}", "Booking call"),
        ("persona", "reproduces", f"/api/v2/personas/{persona_id}", "Impatient caller"),
        ("simulation", "reproduces", f"/api/v2/simulations/{simulation_id}", "Booking regression"),
    ]
    assert all(r["feedbackId"] == feedback_id and r["createdBy"] == api.actor.user_id for r in listed)
    assert [r["createdAt"] for r in listed] == sorted(r["createdAt"] for r in listed)
    # An answer of the add is the list's element.
    assert add(api, feedback_id, 409, entityType="persona", entityId=persona_id, relation="reproduces")


def test_a_feedback_without_references_lists_none(platform):
    api = owner(platform)
    feedback_id = factories.feedback(api.actor, agent_id=factories.agent(api.actor))
    assert api("GET", f"/feedbacks/{feedback_id}/references") == {"success": True, "references": []}


def test_a_label_given_wins_over_the_derived_one_and_is_1_to_200_characters(platform):
    api = owner(platform)
    call_id = factories.call(api.actor)
    feedback_id = factories.feedback(api.actor, call_id=call_id)
    made = add(api, feedback_id, entityType="call", entityId=call_id, relation="related", label="L" * 200)
    assert made["label"] == "L" * 200
    trimmed = add(api, feedback_id, entityType="call", entityId=call_id, relation="reproduces", label=" Lost date ")
    assert trimmed["label"] == "Lost date"
    other = factories.call(api.actor)
    assert "label" in add(api, feedback_id, 400, entityType="call", entityId=other, relation="related",
                          label="L" * 201)["message"]
    assert add(api, feedback_id, 400, entityType="call", entityId=other, relation="related",
               label="   ")["message"] == "label must be 1 to 200 characters once trimmed; 0 given."
    assert "label" in add(api, feedback_id, 400, entityType="call", entityId=other, relation="related",
                          label="a\nb")["message"]
    assert add(api, feedback_id, entityType="call", entityId=other, relation="related", label="L")["label"] == "L"


@pytest.mark.parametrize("kind", ["call", "version", "solution", "review", "persona", "simulation"])
def test_an_entity_the_workspace_lacks_is_404_naming_it(platform, kind):
    api = owner(platform)
    feedback_id = factories.feedback(api.actor, call_id=factories.call(api.actor))
    unknown = str(uuid.uuid4())
    assert add(api, feedback_id, 404, entityType=kind, entityId=unknown, relation="related")["message"] == \
        f"No {kind} {unknown} in this workspace."
    # Another workspace's, likewise.
    other = platform.workspace("other")
    agent_id = factories.agent(other)
    foreign = {"call": lambda: factories.call(other), "review": lambda: factories.review(other),
               "solution": lambda: _solution(other, agent_id, "theirs"),
               "version": lambda: _version(Api(platform, other), agent_id)["id"],
               "persona": lambda: factories.persona(other, "Theirs"),
               "simulation": lambda: factories.simulation(other, agent_id)}[kind]()
    assert add(api, feedback_id, 404, entityType=kind, entityId=foreign, relation="related")["message"] == \
        f"No {kind} {foreign} in this workspace."
    assert len(refs(api, feedback_id)) == 1


def test_a_deleted_simulations_reference_keeps_its_id_for_a_label(platform):
    from models.simulations import simulations
    api = owner(platform)
    agent_id = factories.agent(api.actor)
    feedback_id = factories.feedback(api.actor, agent_id=agent_id)
    simulation_id = factories.simulation(api.actor, agent_id, name="Nightly")
    made = add(api, feedback_id, entityType="simulation", entityId=simulation_id, relation="related")
    assert made["label"] == "Nightly"
    with session():
        simulations.cancel(workspace_id=api.actor.workspace_id, simulation_id=simulation_id)
        simulations.delete(workspace_id=api.actor.workspace_id, simulation_id=simulation_id)
    assert refs(api, feedback_id)[0]["label"] == f"Simulation {simulation_id}"


def test_a_personas_reference_is_labelled_with_its_name_as_it_is_now(platform):
    api = owner(platform)
    feedback_id = factories.feedback(api.actor, agent_id=factories.agent(api.actor))
    persona_id = factories.persona(api.actor, "Impatient caller")
    made = add(api, feedback_id, entityType="persona", entityId=persona_id, relation="reproduces")
    assert (made["label"], made["url"]) == ("Impatient caller", f"/api/v2/personas/{persona_id}")
    assert add(api, feedback_id, entityType="persona", entityId=persona_id, relation="related",
               label="Given")["label"] == "Given"
    api("PATCH", f"/personas/{persona_id}", json={"name": "Very impatient caller"})
    assert [r["label"] for r in refs(api, feedback_id)] == ["Very impatient caller", "Given"]
    # Once the persona is gone, its references stay, with a label of their own.
    api("DELETE", f"/personas/{persona_id}")
    assert [r["label"] for r in refs(api, feedback_id)] == [f"Persona {persona_id}", "Given"]


def test_the_same_entity_and_relation_twice_is_409_naming_the_reference(platform):
    api = owner(platform)
    call_id = factories.call(api.actor)
    feedback_id = factories.feedback(api.actor, call_id=call_id)
    source = refs(api, feedback_id)[0]
    message = add(api, feedback_id, 409, entityType="call", entityId=call_id, relation="source")["message"]
    assert message == f"The feedback references call {call_id} as source already: reference {source['id']}."
    # Another relation to the same call is another reference.
    assert add(api, feedback_id, entityType="call", entityId=call_id, relation="related")["relation"] == "related"


@pytest.mark.parametrize("body, field", [
    ({"entityType": "agent", "relation": "related"}, "entityType"),
    ({"entityType": "call", "relation": "caused"}, "relation"),
    ({"entityType": "call", "relation": "related", "entityId": "not-a-uuid"}, "entityId"),
    ({"entityType": "call", "relation": "related", "extra": 1}, "extra"),
])
def test_an_unknown_kind_or_relation_is_400_naming_it(platform, body, field):
    api = owner(platform)
    call_id = factories.call(api.actor)
    feedback_id = factories.feedback(api.actor, call_id=call_id)
    assert field in add(api, feedback_id, 400, **{"entityId": call_id, **body})["message"]


def test_a_feedback_holds_at_most_200_references(platform):
    from models.feedback import references
    api = owner(platform)
    feedback_id = factories.feedback(api.actor, call_id=factories.call(api.actor))  # its source is the first
    with session():  # as the actions add them, whatever the count: simulations that reproduce it
        for _ in range(198):
            references.add(workspace_id=api.actor.workspace_id, feedback_id=feedback_id, entity_type="simulation",
                           entity_id=str(uuid.uuid4()), relation="reproduces", created_by=api.actor.user_id)
    persona_id = factories.persona(api.actor)
    add(api, feedback_id, entityType="persona", entityId=persona_id, relation="related")  # the 200th
    message = add(api, feedback_id, 409, entityType="persona", entityId=persona_id, relation="reproduces")["message"]
    assert message == "A feedback holds at most 200 references; this one has 200: delete one first."
    listed = refs(api, feedback_id)
    assert len(listed) == 200
    api("DELETE", f"/feedbacks/{feedback_id}/references/{listed[-1]['id']}")
    add(api, feedback_id, entityType="persona", entityId=persona_id, relation="reproduces")


def test_a_reference_is_removed_once(platform):
    api = owner(platform)
    call_id = factories.call(api.actor)
    feedback_id = factories.feedback(api.actor, call_id=call_id)
    made = add(api, feedback_id, entityType="call", entityId=call_id, relation="related")
    path = f"/feedbacks/{feedback_id}/references/{made['id']}"
    assert api("DELETE", path) == {"id": made["id"], "deleted": True}
    assert [r["relation"] for r in refs(api, feedback_id)] == ["source"]
    assert api("DELETE", path, 404)["message"] == \
        f"No reference {made['id']} on feedback {feedback_id} in this workspace."
    # A reference named under another feedback of the workspace is not found there.
    source = refs(api, feedback_id)[0]
    other = factories.feedback(api.actor, call_id=call_id)
    api("DELETE", f"/feedbacks/{other}/references/{source['id']}", 404)
    assert refs(api, feedback_id) == [source]


def test_another_workspaces_feedback_and_references_are_404(platform):
    mine, theirs = owner(platform), owner(platform)
    call_id = factories.call(theirs.actor)
    feedback_id = factories.feedback(theirs.actor, call_id=call_id)
    reference_id = refs(theirs, feedback_id)[0]["id"]
    assert mine("GET", f"/feedbacks/{feedback_id}/references", 404)["message"] == \
        f"No feedback {feedback_id} in this workspace."
    add(mine, feedback_id, 404, entityType="persona", entityId=str(uuid.uuid4()), relation="related")
    mine("DELETE", f"/feedbacks/{feedback_id}/references/{reference_id}", 404)
    mine_feedback = factories.feedback(mine.actor, agent_id=factories.agent(mine.actor))
    mine("DELETE", f"/feedbacks/{mine_feedback}/references/{reference_id}", 404)
    assert len(refs(theirs, feedback_id)) == 1


def test_feedback_raised_from_a_review_references_the_review_as_its_source(platform):
    api = owner(platform)
    call_id = factories.call(api.actor)
    review_id = factories.done_review(api.actor, call_id=call_id, title="Booking call")
    feedback_id = api("POST", f"/reviews/{review_id}/feedback", json={"title": "Wrong date"})["feedback"]["id"]
    assert [(r["entityType"], r["entityId"], r["relation"], r["label"]) for r in refs(api, feedback_id)] == [
        ("call", call_id, "source", refs(api, feedback_id)[0]["label"]),
        ("review", review_id, "source", "Booking call")]
    # Once the review is gone, its reference stays, with a label of its own.
    api("DELETE", f"/reviews/{review_id}")
    assert refs(api, feedback_id)[1]["label"] == f"Review {review_id}"


def test_twenty_adds_of_one_reference_at_once_make_one(platform):
    api = owner(platform)
    call_id = factories.call(api.actor)
    feedback_id = factories.feedback(api.actor, agent_id=factories.agent(api.actor))
    body = {"entityType": "call", "entityId": call_id, "relation": "related"}

    def post(_index: int) -> int:
        return platform.client.post(f"/api/v2/feedbacks/{feedback_id}/references", json=body, headers=api.actor.headers,
                                    params={"workspaceId": api.actor.workspace_id}).status_code

    statuses = run_threads(20, post)
    assert sorted(statuses) == [200] + [409] * 19, statuses
    assert [r["relation"] for r in refs(api, feedback_id)] == ["related"]


def test_twenty_threads_adding_one_reference_through_the_domain_leave_one_row(platform):
    """Each thread with a connection and a transaction of its own, as twenty server processes would."""
    from models.feedback import references
    from models.feedback.tables import FeedbackReference
    from models.kernel.db import database, is_postgres
    from models.kernel.errors import Conflict
    api = owner(platform)
    review_id = factories.review(api.actor)
    feedback_id = factories.feedback(api.actor, agent_id=factories.agent(api.actor))

    def add_one(_index: int) -> str:
        try:
            with session(), database.atomic():
                references.add_by_hand(factories.principal(api.actor), workspace_id=api.actor.workspace_id,
                                       feedback_id=feedback_id, entity_type="review", entity_id=review_id,
                                       relation="related")
            return "added"
        except Conflict:
            return "conflict"
        finally:
            if not is_postgres():
                database.close()

    assert sorted(run_threads(20, add_one)) == ["added"] + ["conflict"] * 19
    with session():
        assert FeedbackReference.in_workspace(api.actor.workspace_id).where(
            FeedbackReference.feedback == feedback_id).count() == 1
