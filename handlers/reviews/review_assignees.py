"""Who reviews a review: getReviewAssignees, addReviewAssignee, removeReviewAssignee."""
from __future__ import annotations

from api.envelope import ok
from handlers.feedback.shapes import assignee_shape
from handlers.reviews.reviews import review_shape
from handlers.wire import deleted
from models.reviews import assignees, reviews


def get_review_assignees(workspaceId: str, reviewId: str):
    reviews.get(workspace_id=workspaceId, review_id=reviewId)
    found = assignees.of(workspaceId, [reviewId])[reviewId]
    return ok({"assignees": [assignee_shape(a) for a in found]})


def add_review_assignee(workspaceId: str, reviewId: str, body: dict, principal):
    added = assignees.add(principal, workspace_id=workspaceId, review_id=reviewId, user_id=body["userId"])
    record = reviews.get(workspace_id=workspaceId, review_id=reviewId)
    return ok({"assignee": assignee_shape(added),
               "review": review_shape(record, assignees.of(workspaceId, [reviewId])[reviewId])}, "Assignee added")


def remove_review_assignee(workspaceId: str, reviewId: str, userId: str):
    assignees.remove(workspace_id=workspaceId, review_id=reviewId, user_id=userId)
    return deleted(userId, "Assignee removed")
