"""Reviews: a person's scoring of a call against a rubric, and the feedback a done review raises.

A review has a target (a call of the workspace; simulation iterations join when that group
exists), a rubric of 1 to 20 named criteria each with an integer range, a score per criterion,
notes, and a status that moves:

    pending -> in_review, pending -> done (once every criterion is scored),
    in_review -> done (likewise), in_review -> pending, done -> in_review (reopening it)

A done review keeps its scores and rubric until it is reopened; the rubric changes only while the
review is pending and unscored (scores are keyed by the criteria's names). Each change locks the
review's row (PostgreSQL; SQLite has one writer), so two at once apply one after the other.
"""
from __future__ import annotations

import functools
from datetime import datetime
from typing import NamedTuple

from models.calls.tables import Call
from models.feedback import feedbacks, references
from models.feedback.feedbacks import FeedbackRecord, text_field
from models.identity.principal import Principal
from models.kernel.db import database, is_postgres, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.pagination import Page, workspace_list
from models.kernel.sql import Prepared
from models.kernel.text import text_problem
from models.reviews.tables import Review, ReviewAssignee

TARGET_TYPES = ("call",)
STATUSES = ("pending", "in_review", "done")
# The moves each status allows, in the order a message lists them.
MOVES = {"pending": ("in_review", "done"), "in_review": ("done", "pending"), "done": ("in_review",)}
MAX_CRITERIA = 20
CRITERION_NAME_MAX_CHARS = 60
CRITERION_DESCRIPTION_MAX_CHARS = 500
SCORE_BOUND = 1_000_000  # a criterion's min and max lie within plus or minus this
TITLE_MAX_CHARS = 200
NOTES_MAX_CHARS = 10_000
UNSET = object()  # a field an update leaves as it is (None clears it)


class ReviewRecord(NamedTuple):
    id: str
    workspace_id: str
    target_type: str
    target_id: str
    title: str | None
    rubric: list[dict]
    scores: dict
    notes: str | None
    status: str
    feedback_id: str | None
    created_by: str
    created_at: datetime
    updated_at: datetime
    completed_at: datetime | None
    completed_by: str | None


_R, _A = Review, ReviewAssignee
_COLUMNS = (_R.id, _R.workspace, _R.target_type, _R.target_id, _R.title, _R.rubric, _R.scores, _R.notes, _R.status,
            _R.feedback_id, _R.created_by, _R.created_at, _R.updated_at, _R.completed_at, _R.completed_by)
_ONE = Prepared(lambda workspace_id, review_id: _R.in_workspace(workspace_id, *_COLUMNS).where(_R.id == review_id))

_FILTERS = {
    "target_type": lambda params: _R.target_type == params["target_type"],
    "target_id": lambda params: _R.target_id == params["target_id"],
    "assignee_id": lambda params: _R.id.in_(_A.in_workspace(params["workspace_id"], _A.review)
                                            .where(_A.user_id == params["assignee_id"])),
    "since": lambda params: _R.created_at >= params["since"],
    "until": lambda params: _R.created_at < params["until"],
}


@functools.cache
def _page(statuses: tuple[str, ...], names: tuple[str, ...], ascending: bool):
    """The list for one set of filters and one order, compiled once (statuses, from a closed
    list, are constants of the statement)."""
    order = (_R.created_at, _R.id) if ascending else (_R.created_at.desc(), _R.id.desc())

    def where(params):
        found = [_R.status.in_(statuses)] if statuses else []
        return found + [_FILTERS[name](params) for name in names]

    return workspace_list(_R, _COLUMNS, order_by=order, names=names, where=where)


def list_reviews(*, workspace_id: str, limit: int, offset: int, statuses: list[str] | None = None,
                 ascending: bool = False, **filters) -> Page[ReviewRecord]:
    """Newest first unless ``ascending``; ``filters``: any of target_type, target_id, assignee_id,
    since, until (naive UTC; since inclusive, until exclusive); None is no filter. One statement
    per page whatever the filters."""
    if unknown := [s for s in statuses or () if s not in STATUSES]:
        raise InvalidInput(f"status must be one or more of {', '.join(STATUSES)}, comma-separated; "
                           f"{unknown[0]!r} is none.")
    values = {name: value for name, value in filters.items() if value is not None}
    if unknown := set(values) - set(_FILTERS):
        raise TypeError(f"unknown review filters: {unknown}")
    if "since" in values and "until" in values and values["until"] <= values["since"]:
        raise InvalidInput("until must be later than since.")
    for name in ("since", "until"):
        if name in values:  # as stored, so SQLite compares text with text
            values[name] = _R.created_at.db_value(values[name])
    chosen = tuple(s for s in STATUSES if s in (statuses or ()))
    return _page(chosen, tuple(sorted(values)), ascending).page(ReviewRecord, workspace_id=workspace_id,
                                                                   limit=limit, offset=offset, **values)


def get(*, workspace_id: str, review_id: str) -> ReviewRecord:
    record = _ONE.first(ReviewRecord, workspace_id=workspace_id, review_id=review_id)
    if record is None:
        raise NotFound(f"No review {review_id} in this workspace.")
    return record


def lock(workspace_id: str, review_id: str) -> ReviewRecord:
    """The review, its row locked (PostgreSQL) until the transaction ends; NotFound otherwise."""
    query = _R.in_workspace(workspace_id, *_COLUMNS).where(_R.id == review_id)
    row = (query.for_update() if is_postgres() else query).tuples().first()
    if row is None:
        raise NotFound(f"No review {review_id} in this workspace.")
    return ReviewRecord._make(row)


def _integer(value, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{field} must be an integer.")
    return value


def check_rubric(rubric) -> list[dict]:
    """The rubric as stored: 1 to 20 criteria, each {name (1 to 60 characters once trimmed,
    unique without regard to case), description (optional), min, max (integers, max > min)}."""
    if not isinstance(rubric, list) or not 1 <= len(rubric) <= MAX_CRITERIA:
        raise InvalidInput(f"rubric must list 1 to {MAX_CRITERIA} criteria.")
    checked, seen = [], {}
    for index, criterion in enumerate(rubric):
        field = f"rubric[{index}]"
        if not isinstance(criterion, dict):
            raise InvalidInput(f"{field} must be an object with name, min and max.")
        if unknown := set(criterion) - {"name", "description", "min", "max"}:
            raise InvalidInput(f"{field} has no field {min(unknown)!r}; a criterion has name, description, "
                               "min and max.")
        name = text_field(criterion.get("name"), f"{field}.name", CRITERION_NAME_MAX_CHARS, required=True)
        if name.lower() in seen:
            raise InvalidInput(f"rubric names the criterion {name!r} twice ({field} and rubric[{seen[name.lower()]}]); "
                               "names are unique without regard to case.")
        seen[name.lower()] = index
        description = text_field(criterion.get("description"), f"{field}.description",
                                 CRITERION_DESCRIPTION_MAX_CHARS, required=False, multiline=True)
        low = _integer(criterion.get("min"), f"{field}.min")
        high = _integer(criterion.get("max"), f"{field}.max")
        if not -SCORE_BOUND <= low < high <= SCORE_BOUND:
            raise InvalidInput(f"{field}: max must be greater than min, both within -{SCORE_BOUND} and {SCORE_BOUND}; "
                               f"min {low} and max {high} given.")
        checked.append({"name": name, "description": description, "min": low, "max": high})
    return checked


def _scored(given, rubric: list[dict], current: dict) -> dict:
    """``current`` with the scores ``given`` set (None removes one), each within its criterion's range."""
    if not isinstance(given, dict):
        raise InvalidInput("scores must be an object of criterion names to integer scores.")
    ranges = {c["name"]: (c["min"], c["max"]) for c in rubric}
    merged = dict(current)
    for name, score in given.items():
        if name not in ranges:
            shown = name if text_problem(name) is None else name.encode("unicode_escape").decode()
            raise InvalidInput(f"scores names {shown!r}, no criterion of the rubric (its criteria: "
                               f"{', '.join(ranges)}).")
        if score is None:
            merged.pop(name, None)
            continue
        low, high = ranges[name]
        if isinstance(score, bool) or not isinstance(score, int) or not low <= score <= high:
            raise InvalidInput(f"scores.{name} must be an integer from {low} to {high}; {score!r} given.")
        merged[name] = score
    return {c["name"]: merged[c["name"]] for c in rubric if c["name"] in merged}  # in the rubric's order


def create(principal: Principal, *, workspace_id: str, target_type: str, target_id: str, rubric,
           title: str | None = None) -> ReviewRecord:
    """A pending review of a call of the workspace (NotFound naming it otherwise)."""
    if target_type not in TARGET_TYPES:
        raise InvalidInput(f"targetType must be one of {', '.join(TARGET_TYPES)}.")
    title = text_field(title, "title", TITLE_MAX_CHARS, required=False)
    rubric = check_rubric(rubric)
    now = utcnow()
    with database.atomic():
        if not Call.in_workspace(workspace_id, Call.id).where(Call.id == target_id).exists():
            raise NotFound(f"No call {target_id} in this workspace.")
        row = _R.create(workspace=workspace_id, target_type=target_type, target_id=target_id, title=title,
                        rubric=rubric, scores={}, notes=None, status="pending", created_by=principal.user_id,
                        created_at=now, updated_at=now)
    return get(workspace_id=workspace_id, review_id=row.id)


def _move(record: ReviewRecord, status) -> str:
    if status is None or status == record.status:
        return record.status
    if status not in STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(STATUSES)}.")
    if status not in MOVES[record.status]:
        raise Conflict(f"A review cannot move from {record.status} to {status}: from {record.status} it moves to "
                       f"{' or '.join(MOVES[record.status])}.")
    return status


def update(principal: Principal, *, workspace_id: str, review_id: str, title=UNSET, notes=UNSET, scores=None,
           rubric=None, status=None) -> ReviewRecord:
    """Its title, notes, scores (merged into the scores it has; None removes one), rubric and
    status, in one transaction: 409 for a rubric once scored or out of pending, scores of a done
    review that stays done, an illegal move, or done with a criterion unscored."""
    changes: dict = {}
    if title is not UNSET:
        changes["title"] = text_field(title, "title", TITLE_MAX_CHARS, required=False)
    if notes is not UNSET:
        changes["notes"] = text_field(notes, "notes", NOTES_MAX_CHARS, required=False, multiline=True)
    with database.atomic():
        record = lock(workspace_id, review_id)
        target = _move(record, status)
        reopened = record.status == "done" and target != "done"
        current_rubric, current_scores = record.rubric, record.scores
        if rubric is not None:
            if record.status != "pending" or record.scores:
                state = "scored" if record.scores and record.status == "pending" else record.status
                raise Conflict(f"The rubric changes only while the review is pending and unscored; it is {state}.")
            current_rubric = changes["rubric"] = check_rubric(rubric)
        if scores is not None:
            if record.status == "done" and not reopened:
                raise Conflict("A done review's scores cannot change; reopen it first (status in_review).")
            current_scores = changes["scores"] = _scored(scores, current_rubric, current_scores)
        if target != record.status:
            if target == "done":
                missing = [c["name"] for c in current_rubric if c["name"] not in current_scores]
                if missing:
                    raise Conflict(f"A review is done once every criterion is scored; not scored: {', '.join(missing)}.")
                changes.update(completed_at=utcnow(), completed_by=principal.user_id)
            elif reopened:
                changes.update(completed_at=None, completed_by=None)
            changes["status"] = target
        if changes:
            changes["updated_at"] = utcnow()
            _R.update(**changes).where((_R.workspace == workspace_id) & (_R.id == review_id)).execute()
    return get(workspace_id=workspace_id, review_id=review_id)


def delete(*, workspace_id: str, review_id: str) -> None:
    """The review and its assignees; a feedback raised from it stays, its reference kept."""
    with database.atomic():
        if not _R.delete().where((_R.workspace == workspace_id) & (_R.id == review_id)).execute():
            raise NotFound(f"No review {review_id} in this workspace.")


def raise_feedback(principal: Principal, *, workspace_id: str, review_id: str, title, description=None,
                   severity=None) -> tuple[FeedbackRecord, ReviewRecord]:
    """A feedback on the done review's call (createdBy review) with a ``source`` reference to the
    review, which records it: 409 unless the review is done, or when it raised one already."""
    with database.atomic():
        record = lock(workspace_id, review_id)
        if record.status != "done":
            raise Conflict(f"Feedback is raised from a done review; this one is {record.status}.")
        if record.feedback_id and feedbacks.by_ids(workspace_id, [record.feedback_id]):
            raise Conflict(f"This review raised feedback {record.feedback_id} already.")
        extra = {} if severity is None else {"severity": severity}
        raised = feedbacks.create(principal, workspace_id=workspace_id, title=title, description=description,
                                  call_id=record.target_id, created_by="review", **extra)
        references.add(workspace_id=workspace_id, feedback_id=raised.id, entity_type="review", entity_id=review_id,
                       relation="source", created_by=principal.user_id)
        _R.update(feedback_id=raised.id, updated_at=utcnow()).where(
            (_R.workspace == workspace_id) & (_R.id == review_id)).execute()
    return raised, get(workspace_id=workspace_id, review_id=review_id)
