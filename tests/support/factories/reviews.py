"""Reviews: reviews of calls with a rubric, scored and moved as the API does it, and feedback
references added by hand."""
from __future__ import annotations

from models.kernel.db import session
from tests.support.factories.calls import call
from tests.support.factories.identity import Actor, principal

RUBRIC = [{"name": "Accuracy", "description": "Facts and figures right", "min": 1, "max": 5},
          {"name": "Tone", "min": 0, "max": 10}]


def review(actor: Actor, *, call_id: str | None = None, rubric: list[dict] | None = None, title: str | None = None,
           scores: dict | None = None, status: str | None = None) -> str:
    """A review of ``call_id`` (a new call of the actor's workspace unless given), scored with
    ``scores`` and moved to ``status`` (done: through in_review); its id."""
    from models.reviews import reviews
    target = call_id or call(actor)
    with session():
        made = reviews.create(principal(actor), workspace_id=actor.workspace_id, target_type="call", target_id=target,
                              rubric=rubric or RUBRIC, title=title)
        if scores:
            reviews.update(principal(actor), workspace_id=actor.workspace_id, review_id=made.id, scores=scores)
        if status:
            reviews.update(principal(actor), workspace_id=actor.workspace_id, review_id=made.id, status=status)
        return made.id


def done_review(actor: Actor, **fields) -> str:
    """A review of a call with every criterion of the default rubric scored, done."""
    return review(actor, scores={"Accuracy": 2, "Tone": 7}, status="done", **fields)


def feedback_reference(actor: Actor, feedback_id: str, entity_type: str, entity_id: str, relation: str = "related",
                       label: str | None = None) -> str:
    """A reference added by hand to the actor's feedback; its id."""
    from models.feedback import references
    with session():
        return references.add_by_hand(principal(actor), workspace_id=actor.workspace_id, feedback_id=feedback_id,
                                      entity_type=entity_type, entity_id=entity_id, relation=relation,
                                      label=label).id
