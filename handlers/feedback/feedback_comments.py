"""Comments on a feedback: createFeedbackComment, listFeedbackComments, updateFeedbackComment,
deleteFeedbackComment."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import deleted, iso
from models.feedback import comments
from models.feedback.comments import CommentRecord


def comment_shape(record: CommentRecord) -> dict:
    return {"id": record.id, "workspaceId": record.workspace_id, "feedbackId": record.feedback_id,
            "authorId": record.author_id, "authorName": record.author_name, "body": record.body,
            "createdAt": iso(record.created_at), "updatedAt": iso(record.updated_at)}


def create_feedback_comment(workspaceId: str, feedbackId: str, body: dict, principal):
    record = comments.add(principal, workspace_id=workspaceId, feedback_id=feedbackId, body=body["body"])
    return ok({"comment": comment_shape(record)}, "Comment added")


def list_feedback_comments(workspaceId: str, feedbackId: str, limit: int = 20, offset: int = 0):
    page = comments.list_comments(workspace_id=workspaceId, feedback_id=feedbackId, limit=limit, offset=offset)
    return ok({"comments": [comment_shape(c) for c in page.items], "pagination": page.pagination()})


def update_feedback_comment(workspaceId: str, feedbackId: str, commentId: str, body: dict, principal):
    record = comments.update(principal, workspace_id=workspaceId, feedback_id=feedbackId, comment_id=commentId,
                             body=body["body"])
    return ok({"comment": comment_shape(record)}, "Comment updated")


def delete_feedback_comment(workspaceId: str, feedbackId: str, commentId: str, principal):
    comments.delete(principal, workspace_id=workspaceId, feedback_id=feedbackId, comment_id=commentId)
    return deleted(commentId, "Comment deleted")
