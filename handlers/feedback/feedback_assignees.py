"""A feedback's assignees: listFeedbackAssignees, addFeedbackAssignee, removeFeedbackAssignee."""
from __future__ import annotations

from api.envelope import ok
from handlers.feedback.feedbacks import shaped
from handlers.feedback.shapes import assignee_shape
from handlers.wire import deleted
from models.feedback import assignees, feedbacks


def list_feedback_assignees(workspaceId: str, feedbackId: str, limit: int = 20, offset: int = 0):
    page = assignees.list_assignees(workspace_id=workspaceId, feedback_id=feedbackId, limit=limit, offset=offset)
    return ok({"assignees": [assignee_shape(a) for a in page.items], "pagination": page.pagination()})


def add_feedback_assignee(workspaceId: str, feedbackId: str, body: dict, principal):
    assignee = assignees.add(principal, workspace_id=workspaceId, feedback_id=feedbackId, user_id=body["userId"])
    record = feedbacks.get(workspace_id=workspaceId, feedback_id=feedbackId)
    return ok({"assignee": assignee_shape(assignee), "feedback": shaped(record, principal)}, "Assignee added")


def remove_feedback_assignee(workspaceId: str, feedbackId: str, userId: str):
    assignees.remove(workspace_id=workspaceId, feedback_id=feedbackId, user_id=userId)
    return deleted(userId, "Assignee removed")
