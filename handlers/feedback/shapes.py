"""The wire shapes of a feedback, which the feedback, review and optimization groups all show, and
of an assignee, a feedback's or a review's. The customer's number of a feedback's call is personal
data: whole only with calls:pii."""
from __future__ import annotations

from handlers.wire import iso
from models.calls import export
from models.feedback.feedbacks import FeedbackRecord
from models.identity.assignees import Assignee


def assignee_shape(assignee: Assignee) -> dict:
    return {"userId": assignee.user_id, "assignedAt": iso(assignee.assigned_at), "userName": assignee.user_name}


def feedback_shape(record: FeedbackRecord, assignees: list[Assignee], permissions) -> dict:
    return {
        "id": record.id,
        "workspaceId": record.workspace_id,
        "number": record.number,
        "title": record.title,
        "description": record.description,
        "callId": record.call_id,
        "messageId": record.message_id,
        "agentId": record.agent_id,
        "agentEntityType": record.entity_type,
        "agentWorkflowId": record.workflow_id,
        "agentName": record.agent_name,
        "solutionId": record.solution_id,
        "severity": record.severity,
        "status": record.status,
        "assignedTo": assignees[0].user_id if assignees else None,
        "assignees": [assignee_shape(a) for a in assignees],
        "createdBy": record.created_by,
        "authorId": record.author_id,
        "resolved": record.resolved,
        "resolvedAt": iso(record.resolved_at),
        "resolvedBy": record.resolved_by,
        "resolvedByName": record.resolved_by_name,
        "closedByVersionId": record.closed_by_version_id,
        "commentsCount": record.comments_count,
        "isArchived": record.is_archived,
        "createdAt": iso(record.created_at),
        "updatedAt": iso(record.updated_at),
        "callStartedAt": iso(record.call_started_at),
        "customerNumber": export.customer_number(record.customer, permissions),
    }
