"""Who reviews a review: members of its workspace, first assigned first; the first is the review's
``assignedTo``.

Adding an assignee the review has already changes nothing (two adds at once leave one row: the
review's row is locked while its assignees change, and a unique index backs it). A review has at
most ``MAX_PER_REVIEW`` assignees, so that its list needs no pages.
"""
from __future__ import annotations

from collections.abc import Iterable

from peewee import IntegrityError, fn

from models.identity.assignees import Assignee, assignees_of, require_member
from models.identity.principal import Principal
from models.kernel.db import database, utcnow
from models.kernel.errors import Conflict, NotFound
from models.reviews import reviews
from models.reviews.tables import ReviewAssignee

MAX_PER_REVIEW = 20

_A = ReviewAssignee


def of(workspace_id: str, ids: Iterable[str]) -> dict[str, list[Assignee]]:
    """The assignees of each of the reviews ``ids``, first assigned first, in one statement."""
    return assignees_of(_A, _A.review, workspace_id, ids)


def _held(workspace_id: str, review_id: str, user_id: str) -> bool:
    return _A.in_workspace(workspace_id, _A.id).where((_A.review == review_id) & (_A.user_id == user_id)).exists()


def add(principal: Principal, *, workspace_id: str, review_id: str, user_id: str) -> Assignee:
    """``user_id`` (a member of the workspace, NotFound otherwise) among the review's assignees;
    409 when the review has ``MAX_PER_REVIEW`` already."""
    with database.atomic():
        reviews.lock(workspace_id, review_id)
        require_member(workspace_id, user_id)
        if not _held(workspace_id, review_id, user_id):
            count = _A.in_workspace(workspace_id, fn.COUNT(_A.id)).where(_A.review == review_id).scalar()
            if count >= MAX_PER_REVIEW:
                raise Conflict(f"A review has at most {MAX_PER_REVIEW} assignees; remove one first.")
            try:
                with database.atomic():  # a savepoint: a twin's insert leaves the request's transaction whole
                    _A.create(workspace=workspace_id, review=review_id, user_id=user_id,
                              assigned_by=principal.user_id, assigned_at=utcnow())
            except IntegrityError:
                pass
    return next(a for a in of(workspace_id, [review_id])[review_id] if a.user_id == user_id)


def remove(*, workspace_id: str, review_id: str, user_id: str) -> None:
    with database.atomic():
        reviews.lock(workspace_id, review_id)
        if not _A.delete().where((_A.workspace == workspace_id) & (_A.review == review_id)
                                 & (_A.user_id == user_id)).execute():
            raise NotFound(f"User {user_id} is not assigned to review {review_id}.")
