"""Feedback: createFeedback, listFeedbacks, getFeedback, updateFeedback, deleteFeedback,
archiveFeedback, unarchiveFeedback, resolveFeedback, reopenFeedback."""
from __future__ import annotations

from api.envelope import ok
from handlers.feedback.shapes import feedback_shape
from handlers.wire import deleted, naive_utc
from models.feedback import feedbacks
from models.feedback.feedbacks import FeedbackFilter, FeedbackRecord

# The body's fields PATCH may change, by their domain names.
_CHANGEABLE = {"title": "title", "description": "description", "severity": "severity", "status": "status",
               "messageId": "message_id"}


def shaped(record: FeedbackRecord, principal) -> dict:
    """One feedback as every answer of the group shows it, with its assignees."""
    assignees = feedbacks.assignees_of(record.workspace_id, [record.id]).get(record.id, [])
    return feedback_shape(record, assignees, principal.permissions)


def create_feedback(workspaceId: str, body: dict, principal):
    record = feedbacks.create(principal, workspace_id=workspaceId, title=body["title"],
                              description=body.get("description"), severity=body.get("severity", 3),
                              status=body.get("status"), call_id=body.get("callId"), message_id=body.get("messageId"),
                              agent_id=body.get("agentId"), workflow_id=body.get("workflowId"))
    return ok({"feedback": shaped(record, principal)}, f"Feedback #{record.number} created")


# Named one by one: a handler taking **kwargs would also be handed connexion's request context.
def list_feedbacks(workspaceId: str, principal, limit: int = 20, offset: int = 0, status=None, agentId=None,
                   workflowId=None, callId=None, severity=None, minSeverity=None, assigneeId=None, resolved=None,
                   archived=False, since=None, until=None, q=None, sortBy="createdAt", sortOrder="desc"):
    filters = FeedbackFilter(
        statuses=tuple(status.split(",")) if status else (), agent_id=agentId, workflow_id=workflowId,
        call_id=callId, severities=tuple(int(s) for s in severity.split(",")) if severity else (),
        min_severity=minSeverity, assignee_id=assigneeId, resolved=resolved, archived=archived,
        since=naive_utc(since, "since"), until=naive_utc(until, "until"), q=q, sort=sortBy,
        descending=sortOrder == "desc")
    page = feedbacks.list_feedbacks(workspace_id=workspaceId, filters=filters, limit=limit, offset=offset)
    assignees = feedbacks.assignees_of(workspaceId, [f.id for f in page.items])
    return ok({"feedbacks": [feedback_shape(f, assignees.get(f.id, []), principal.permissions) for f in page.items],
               "pagination": page.pagination()})


def get_feedback(workspaceId: str, feedbackId: str, principal):
    return ok({"feedback": shaped(feedbacks.get(workspace_id=workspaceId, feedback_id=feedbackId), principal)})


def update_feedback(workspaceId: str, feedbackId: str, body: dict, principal):
    changes = {name: body[field] for field, name in _CHANGEABLE.items() if field in body}
    record = feedbacks.update(principal, workspace_id=workspaceId, feedback_id=feedbackId, **changes)
    return ok({"feedback": shaped(record, principal)}, "Feedback updated")


def delete_feedback(workspaceId: str, feedbackId: str):
    feedbacks.delete(workspace_id=workspaceId, feedback_id=feedbackId)
    return deleted(feedbackId, "Feedback deleted, with its assignees, comments and references")


def archive_feedback(workspaceId: str, feedbackId: str, principal):
    record = feedbacks.set_archived(workspace_id=workspaceId, feedback_id=feedbackId, archived=True)
    return ok({"feedback": shaped(record, principal)}, "Feedback archived")


def unarchive_feedback(workspaceId: str, feedbackId: str, principal):
    record = feedbacks.set_archived(workspace_id=workspaceId, feedback_id=feedbackId, archived=False)
    return ok({"feedback": shaped(record, principal)}, "Feedback unarchived")


def resolve_feedback(workspaceId: str, feedbackId: str, principal, body: dict | None = None):
    record = feedbacks.resolve(principal, workspace_id=workspaceId, feedback_id=feedbackId,
                               status=(body or {}).get("status"))
    return ok({"feedback": shaped(record, principal)}, f"Feedback resolved ({record.status})")


def reopen_feedback(workspaceId: str, feedbackId: str, principal, body: dict | None = None):
    record = feedbacks.reopen(principal, workspace_id=workspaceId, feedback_id=feedbackId,
                              status=(body or {}).get("status"))
    return ok({"feedback": shaped(record, principal)}, f"Feedback reopened ({record.status})")
