"""A feedback's references: the personas, simulations, calls, versions, solutions and reviews it
concerns, each with its relation.

The actions that cause a reference make it through ``add`` (feedback on a call: ``source``; a
solution proposed for it: ``proposed_fix``; the version that closes it: ``fixed_by``; a simulation
that reproduces it: ``reproduces``; the review it was raised from: ``source``). Adding one twice
(same entity, same relation) keeps the first.
"""
from __future__ import annotations

from peewee import IntegrityError

from models.feedback.tables import FeedbackReference
from models.kernel.db import database, utcnow

ENTITY_TYPES = ("persona", "simulation", "call", "version", "solution", "review")
RELATIONS = ("source", "reproduces", "proposed_fix", "fixed_by", "related")


def add(*, workspace_id: str, feedback_id: str, entity_type: str, entity_id: str, relation: str,
        created_by: str, label: str | None = None) -> None:
    """The reference recorded, unless the feedback has it already (an action repeated, or two at once)."""
    assert entity_type in ENTITY_TYPES and relation in RELATIONS, (entity_type, relation)
    exists = FeedbackReference.in_workspace(workspace_id, FeedbackReference.id).where(
        (FeedbackReference.feedback == feedback_id) & (FeedbackReference.entity_type == entity_type)
        & (FeedbackReference.entity_id == entity_id) & (FeedbackReference.relation == relation)).exists()
    if exists:
        return
    try:
        with database.atomic():  # a savepoint: a concurrent twin's insert leaves the caller's transaction whole
            FeedbackReference.create(workspace=workspace_id, feedback=feedback_id, entity_type=entity_type,
                                     entity_id=entity_id, relation=relation, label=label, created_by=created_by,
                                     created_at=utcnow())
    except IntegrityError:
        pass
