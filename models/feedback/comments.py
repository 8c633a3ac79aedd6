"""Comments on a feedback: added by anyone who may comment, edited by their author alone, deleted
by their author or by whoever may delete feedback.

A feedback's ``comments_count`` changes in the transaction that adds or deletes a comment, by an
``UPDATE ... SET comments_count = comments_count + 1`` that also locks the feedback's row: the
count stays exact however many comments come and go at once, and a page of feedback reads it
rather than counting.
"""
from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from peewee import JOIN, fn

from models.feedback import feedbacks
from models.feedback.tables import FeedbackComment
from models.identity.principal import Principal
from models.identity.tables import User
from models.kernel.db import database, utcnow
from models.kernel.errors import Forbidden, NotFound
from models.kernel.pagination import Page, PageQuery
from models.kernel.sql import Prepared

BODY_MAX_CHARS = 10_000
# Who may delete another's comment: whoever may delete the feedback itself.
MODERATE = "feedbacks:delete"


class CommentRecord(NamedTuple):
    id: str
    workspace_id: str
    feedback_id: str
    author_id: str
    author_name: str | None
    body: str
    created_at: datetime
    updated_at: datetime


_C = FeedbackComment
_COLUMNS = (_C.id, _C.workspace, _C.feedback, _C.author_id, fn.COALESCE(User.display_name, User.email), _C.body,
            _C.created_at, _C.updated_at)


def _with_author(query):
    return query.join(User, JOIN.LEFT_OUTER, on=User.id == _C.author_id)


# Oldest first, along the index (feedback, created_at, id).
_PAGE = PageQuery(
    lambda workspace_id, feedback_id, limit, offset: _with_author(_C.in_workspace(workspace_id, *_COLUMNS))
    .where(_C.feedback == feedback_id).order_by(_C.created_at, _C.id).limit(limit).offset(offset),
    lambda workspace_id, feedback_id: _C.in_workspace(workspace_id, fn.COUNT(_C.id)).where(_C.feedback == feedback_id))
_ONE = Prepared(lambda workspace_id, feedback_id, comment_id: _with_author(_C.in_workspace(workspace_id, *_COLUMNS))
                .where((_C.feedback == feedback_id) & (_C.id == comment_id)))


def _body(value) -> str:
    return feedbacks.text_field(value, "body", BODY_MAX_CHARS, required=True, multiline=True)


def add(principal: Principal, *, workspace_id: str, feedback_id: str, body: str) -> CommentRecord:
    body = _body(body)
    now = utcnow()
    with database.atomic():
        if not feedbacks.touch(workspace_id, feedback_id, comments_count=1):
            raise NotFound(f"No feedback {feedback_id} in this workspace.")
        row = _C.create(workspace=workspace_id, feedback=feedback_id, author_id=principal.user_id, body=body,
                        created_at=now, updated_at=now)
    return get(workspace_id=workspace_id, feedback_id=feedback_id, comment_id=row.id)


def list_comments(*, workspace_id: str, feedback_id: str, limit: int, offset: int) -> Page[CommentRecord]:
    """Oldest first; NotFound for a feedback the workspace lacks (asked only when the page is empty)."""
    page = _PAGE.page(CommentRecord, workspace_id=workspace_id, feedback_id=feedback_id, limit=limit, offset=offset)
    if not page.items:
        feedbacks.get(workspace_id=workspace_id, feedback_id=feedback_id)
    return page


def get(*, workspace_id: str, feedback_id: str, comment_id: str) -> CommentRecord:
    record = _ONE.first(CommentRecord, workspace_id=workspace_id, feedback_id=feedback_id, comment_id=comment_id)
    if record is None:
        raise NotFound(f"No comment {comment_id} on feedback {feedback_id} in this workspace.")
    return record


def update(principal: Principal, *, workspace_id: str, feedback_id: str, comment_id: str, body: str) -> CommentRecord:
    body = _body(body)
    with database.atomic():
        author = get(workspace_id=workspace_id, feedback_id=feedback_id, comment_id=comment_id).author_id
        if author != principal.user_id:
            raise Forbidden("Only a comment's author may edit it.")
        _C.update(body=body, updated_at=utcnow()).where((_C.workspace == workspace_id)
                                                       & (_C.id == comment_id)).execute()
    return get(workspace_id=workspace_id, feedback_id=feedback_id, comment_id=comment_id)


def delete(principal: Principal, *, workspace_id: str, feedback_id: str, comment_id: str) -> None:
    with database.atomic():
        author = get(workspace_id=workspace_id, feedback_id=feedback_id, comment_id=comment_id).author_id
        if author != principal.user_id and MODERATE not in principal.permissions:
            raise Forbidden(f"Only a comment's author, or a holder of {MODERATE}, may delete it.")
        gone = _C.delete().where((_C.workspace == workspace_id) & (_C.feedback == feedback_id)
                                 & (_C.id == comment_id)).execute()
        if not gone:  # deleted by another request meanwhile: that one counted it
            raise NotFound(f"No comment {comment_id} on feedback {feedback_id} in this workspace.")
        feedbacks.touch(workspace_id, feedback_id, comments_count=-1)
