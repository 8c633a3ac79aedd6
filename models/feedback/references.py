"""A feedback's references: the personas, simulations, calls, versions, solutions and reviews it
concerns, each with its relation.

The actions that cause a reference make it through ``add`` (feedback on a call: ``source``; a
solution proposed for it: ``proposed_fix``; the version that closes it: ``fixed_by``; a simulation
that reproduces it: ``reproduces``; the review it was raised from: ``source``). Adding one twice
(same entity, same relation) keeps the first.

People add and remove others by hand (``add_by_hand``, ``delete``): the entity must exist in the
workspace (a call, version, solution, review, persona or simulation). A feedback holds at most
``MAX_PER_FEEDBACK`` references, so that its list needs no pages; the actions add theirs whatever
the count (what happened is recorded), people cannot add past it.

The list reads each reference with what names it (a version's entity and number, a call's start, a
solution's or a review's title, a persona's or a simulation's name) in one statement, whatever the count.
"""
from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from peewee import JOIN, IntegrityError, fn

from models.calls.tables import Call
from models.configs.tables import Version
from models.feedback.tables import Feedback, FeedbackReference
from models.identity.principal import Principal
from models.kernel.db import database, is_postgres, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.scoping import same_workspace
from models.kernel.sql import Prepared
from models.kernel.text import text_problem
from models.optimization.tables import Solution
from models.personas.tables import Persona
from models.simulations.tables import Simulation
from models.reviews.tables import Review

ENTITY_TYPES = ("persona", "simulation", "call", "version", "solution", "review")
RELATIONS = ("source", "reproduces", "proposed_fix", "fixed_by", "related")
# The kinds whose rows this service keeps: a reference to one of them is checked against them.
CHECKED = {"call": Call, "version": Version, "solution": Solution, "review": Review, "persona": Persona,
           "simulation": Simulation}
MAX_PER_FEEDBACK = 200
LABEL_MAX_CHARS = 200


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


class ReferenceRecord(NamedTuple):
    id: str
    feedback_id: str
    entity_type: str
    entity_id: str
    relation: str
    label: str | None  # as stored, else derived (see ``shown_label``)
    created_by: str
    created_at: datetime
    # What names the entity, joined where its kind has a table (None when it is gone):
    version_entity_type: str | None
    version_entity_id: str | None
    version_number: int | None
    call_started_at: datetime | None
    solution_title: str | None
    review_title: str | None
    persona_name: str | None
    simulation_name: str | None


_R = FeedbackReference
_V, _C, _S, _RV, _PE, _SI = (Version.alias("v"), Call.alias("c"), Solution.alias("s"), Review.alias("rv"),
                             Persona.alias("pe"), Simulation.alias("si"))


def _listed(workspace_id):
    return (_R.in_workspace(workspace_id, _R.id, _R.feedback, _R.entity_type, _R.entity_id, _R.relation, _R.label,
                            _R.created_by, _R.created_at, _V.entity_type, _V.entity_id, _V.version_number,
                            _C.started_at, _S.title, _RV.title, _PE.name, _SI.name)
            .join_from(_R, _V, JOIN.LEFT_OUTER,
                       on=same_workspace((_R.entity_type == "version") & (_V.id == _R.entity_id), _V, _R))
            .join_from(_R, _C, JOIN.LEFT_OUTER,
                       on=same_workspace((_R.entity_type == "call") & (_C.id == _R.entity_id), _C, _R))
            .join_from(_R, _S, JOIN.LEFT_OUTER,
                       on=same_workspace((_R.entity_type == "solution") & (_S.id == _R.entity_id), _S, _R))
            .join_from(_R, _RV, JOIN.LEFT_OUTER,
                       on=same_workspace((_R.entity_type == "review") & (_RV.id == _R.entity_id), _RV, _R))
            .join_from(_R, _PE, JOIN.LEFT_OUTER,
                       on=same_workspace((_R.entity_type == "persona") & (_PE.id == _R.entity_id), _PE, _R))
            .join_from(_R, _SI, JOIN.LEFT_OUTER,
                       on=same_workspace((_R.entity_type == "simulation") & (_SI.id == _R.entity_id), _SI, _R)))


_OF_FEEDBACK = Prepared(lambda workspace_id, feedback_id: _listed(workspace_id).where(_R.feedback == feedback_id)
                        .order_by(_R.created_at, _R.id))
_ONE = Prepared(lambda workspace_id, reference_id: _listed(workspace_id).where(_R.id == reference_id))
_FEEDBACK_EXISTS = Prepared(lambda workspace_id, feedback_id: Feedback.in_workspace(workspace_id, Feedback.id)
                            .where(Feedback.id == feedback_id))


def shown_label(record: ReferenceRecord) -> str:
    """The stored label, else one derived from what the list joined: "Version 3", "Call of
    2026-11-23 09:00 UTC", the solution's or the review's title, the persona's or the simulation's
    name; else the kind
    and the id."""
    if record.label:
        return record.label
    if record.entity_type == "version" and record.version_number is not None:
        return f"Version {record.version_number}"
    if record.entity_type == "call" and record.call_started_at is not None:
        return f"Call of {record.call_started_at:%Y-%m-%d %H:%M} UTC"
    if record.entity_type == "solution" and record.solution_title:
        return record.solution_title
    if record.entity_type == "review" and record.review_title:
        return record.review_title
    if record.entity_type == "persona" and record.persona_name:
        return record.persona_name
    if record.entity_type == "simulation" and record.simulation_name:
        return record.simulation_name
    return f"{record.entity_type.capitalize()} {record.entity_id}"


def _require_feedback(workspace_id: str, feedback_id: str, *, lock: bool = False) -> None:
    if lock:
        query = Feedback.in_workspace(workspace_id, Feedback.id).where(Feedback.id == feedback_id)
        found = (query.for_update() if is_postgres() else query).tuples().first() is not None
    else:
        found = _FEEDBACK_EXISTS.scalar(workspace_id=workspace_id, feedback_id=feedback_id) is not None
    if not found:
        raise NotFound(f"No feedback {feedback_id} in this workspace.")


def list_references(*, workspace_id: str, feedback_id: str) -> list[ReferenceRecord]:
    """The feedback's references, oldest first: two statements (the feedback's existence, the
    references with what names them)."""
    _require_feedback(workspace_id, feedback_id)
    return _OF_FEEDBACK.records(ReferenceRecord, workspace_id=workspace_id, feedback_id=feedback_id)


def get(*, workspace_id: str, feedback_id: str, reference_id: str) -> ReferenceRecord:
    record = _ONE.first(ReferenceRecord, workspace_id=workspace_id, reference_id=reference_id)
    if record is None or record.feedback_id != feedback_id:
        raise NotFound(f"No reference {reference_id} on feedback {feedback_id} in this workspace.")
    return record


def _label(value) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput("label must be text.")
    if problem := text_problem(value):
        raise InvalidInput(f"label {problem}.")
    value = value.strip()
    if not 1 <= len(value) <= LABEL_MAX_CHARS:
        raise InvalidInput(f"label must be 1 to {LABEL_MAX_CHARS} characters once trimmed; {len(value)} given.")
    return value


def _existing(workspace_id: str, feedback_id: str, entity_type: str, entity_id: str, relation: str) -> str | None:
    return _R.in_workspace(workspace_id, _R.id).where(
        (_R.feedback == feedback_id) & (_R.entity_type == entity_type) & (_R.entity_id == entity_id)
        & (_R.relation == relation)).scalar()


def _duplicate(entity_type: str, entity_id: str, relation: str, existing: str) -> Conflict:
    return Conflict(f"The feedback references {entity_type} {entity_id} as {relation} already: reference "
                    f"{existing}.")


def add_by_hand(principal: Principal, *, workspace_id: str, feedback_id: str, entity_type: str, entity_id: str,
                relation: str, label: str | None = None) -> ReferenceRecord:
    """A reference a person adds: 404 naming a feedback or an entity the workspace lacks, 409
    naming the reference that holds the same entity and relation, or when the feedback is full."""
    if entity_type not in ENTITY_TYPES:
        raise InvalidInput(f"entityType must be one of {', '.join(ENTITY_TYPES)}.")
    if relation not in RELATIONS:
        raise InvalidInput(f"relation must be one of {', '.join(RELATIONS)}.")
    label = _label(label)
    with database.atomic():
        # The feedback's row locked: adds to one feedback take turns, so the count holds.
        _require_feedback(workspace_id, feedback_id, lock=True)
        table = CHECKED.get(entity_type)
        if table is not None and not table.in_workspace(workspace_id, table.id).where(table.id == entity_id).exists():
            raise NotFound(f"No {entity_type} {entity_id} in this workspace.")
        if existing := _existing(workspace_id, feedback_id, entity_type, entity_id, relation):
            raise _duplicate(entity_type, entity_id, relation, existing)
        held = _R.in_workspace(workspace_id, fn.COUNT(_R.id)).where(_R.feedback == feedback_id).scalar()
        if held >= MAX_PER_FEEDBACK:
            raise Conflict(f"A feedback holds at most {MAX_PER_FEEDBACK} references; this one has {held}: "
                           "delete one first.")
        try:
            with database.atomic():
                row = _R.create(workspace=workspace_id, feedback=feedback_id, entity_type=entity_type,
                                entity_id=entity_id, relation=relation, label=label, created_by=principal.user_id,
                                created_at=utcnow())
        except IntegrityError:  # a twin committed between the check and the insert (SQLite's lock is per write)
            existing = _existing(workspace_id, feedback_id, entity_type, entity_id, relation)
            raise _duplicate(entity_type, entity_id, relation, existing) from None
    return get(workspace_id=workspace_id, feedback_id=feedback_id, reference_id=row.id)


def delete(*, workspace_id: str, feedback_id: str, reference_id: str) -> None:
    with database.atomic():
        if not _R.delete().where((_R.workspace == workspace_id) & (_R.feedback == feedback_id)
                                 & (_R.id == reference_id)).execute():
            raise NotFound(f"No reference {reference_id} on feedback {feedback_id} in this workspace.")
