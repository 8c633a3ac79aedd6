"""Who a feedback is assigned to: members of its workspace, first assigned first (its
``assignedTo`` is the first).

Assigning is idempotent: the pair (feedback, user) is a unique index and the insert is
``ON CONFLICT DO NOTHING``, so a user assigned twice, or by two requests at once, has one row and
keeps the moment of the first.
"""
from __future__ import annotations

from peewee import JOIN, fn

from models.feedback import feedbacks
from models.feedback.tables import FeedbackAssignee
from models.identity.assignees import Assignee, require_member
from models.identity.principal import Principal
from models.identity.tables import User
from models.kernel.db import database
from models.kernel.errors import NotFound
from models.kernel.pagination import Page, PageQuery

_A = FeedbackAssignee


# First assigned first, as assignees_of and assignedTo have them.
_PAGE = PageQuery(
    lambda workspace_id, feedback_id, limit, offset: _A.in_workspace(
        workspace_id, _A.user_id, _A.assigned_at, fn.COALESCE(User.display_name, User.email))
    .join(User, JOIN.LEFT_OUTER, on=User.id == _A.user_id).where(_A.feedback == feedback_id)
    .order_by(_A.assigned_at, _A.id).limit(limit).offset(offset),
    lambda workspace_id, feedback_id: _A.in_workspace(workspace_id, fn.COUNT(_A.id)).where(_A.feedback == feedback_id))


def list_assignees(*, workspace_id: str, feedback_id: str, limit: int, offset: int) -> Page[Assignee]:
    """A page of the feedback's assignees; NotFound for a feedback the workspace lacks (asked only
    when the page is empty)."""
    page = _PAGE.page(Assignee, workspace_id=workspace_id, feedback_id=feedback_id, limit=limit, offset=offset)
    if not page.items:
        feedbacks.get(workspace_id=workspace_id, feedback_id=feedback_id)
    return page


def add(principal: Principal, *, workspace_id: str, feedback_id: str, user_id: str) -> Assignee:
    """``user_id`` assigned to the feedback (NotFound unless both are the workspace's); the
    assignment, the existing one when the user was assigned already."""
    with database.atomic():
        if not feedbacks.touch(workspace_id, feedback_id):
            raise NotFound(f"No feedback {feedback_id} in this workspace.")
        require_member(workspace_id, user_id)
        _A.insert(workspace=workspace_id, feedback=feedback_id, user_id=user_id,
                  assigned_by=principal.user_id).on_conflict_ignore().execute()
    return next(a for a in feedbacks.assignees_of(workspace_id, [feedback_id])[feedback_id] if a.user_id == user_id)


def remove(*, workspace_id: str, feedback_id: str, user_id: str) -> None:
    with database.atomic():
        if not feedbacks.touch(workspace_id, feedback_id):
            raise NotFound(f"No feedback {feedback_id} in this workspace.")
        if not _A.delete().where((_A.workspace == workspace_id) & (_A.feedback == feedback_id)
                                 & (_A.user_id == user_id)).execute():
            raise NotFound(f"User {user_id} is not assigned to feedback {feedback_id}.")
