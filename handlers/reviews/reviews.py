"""Reviews: createReview, listReviews, getReview, updateReview, deleteReview, raiseReviewFeedback."""
from __future__ import annotations

from api.envelope import ok
from handlers.feedback.shapes import assignee_shape, feedback_shape
from handlers.wire import deleted, iso, naive_utc
from models.feedback import feedbacks
from models.identity.assignees import Assignee
from models.reviews import assignees, reviews
from models.reviews.reviews import ReviewRecord

# The fields a PATCH may carry, by their names on the wire and in the domain.
_UPDATABLE = {"title": "title", "notes": "notes", "scores": "scores", "rubric": "rubric", "status": "status"}


def review_shape(record: ReviewRecord, assigned: list[Assignee]) -> dict:
    return {"id": record.id, "workspaceId": record.workspace_id, "targetType": record.target_type,
            "targetId": record.target_id, "title": record.title, "rubric": record.rubric, "scores": record.scores,
            "notes": record.notes, "status": record.status, "feedbackId": record.feedback_id,
            "assignedTo": assigned[0].user_id if assigned else None,
            "assignees": [assignee_shape(a) for a in assigned], "createdBy": record.created_by,
            "createdAt": iso(record.created_at), "updatedAt": iso(record.updated_at),
            "completedAt": iso(record.completed_at), "completedBy": record.completed_by}


def shaped(record: ReviewRecord) -> dict:
    """The review with its assignees (one statement more)."""
    return review_shape(record, assignees.of(record.workspace_id, [record.id])[record.id])


def create_review(workspaceId: str, body: dict, principal):
    record = reviews.create(principal, workspace_id=workspaceId, target_type=body["targetType"],
                            target_id=body["targetId"], rubric=body["rubric"], title=body.get("title"))
    return ok({"review": review_shape(record, [])}, "Review created")


def list_reviews(workspaceId: str, limit: int = 20, offset: int = 0, status: str | None = None,
                 targetType: str | None = None, targetId: str | None = None, assigneeId: str | None = None,
                 since: str | None = None, until: str | None = None, sortBy: str = "createdAt",
                 sortOrder: str = "desc"):
    page = reviews.list_reviews(workspace_id=workspaceId, limit=limit, offset=offset,
                                statuses=status.split(",") if status else None, ascending=sortOrder == "asc",
                                target_type=targetType, target_id=targetId, assignee_id=assigneeId,
                                since=naive_utc(since, "since"), until=naive_utc(until, "until"))
    assigned = assignees.of(workspaceId, [r.id for r in page.items])
    return ok({"reviews": [review_shape(r, assigned[r.id]) for r in page.items], "pagination": page.pagination()})


def get_review(workspaceId: str, reviewId: str):
    return ok({"review": shaped(reviews.get(workspace_id=workspaceId, review_id=reviewId))})


def update_review(workspaceId: str, reviewId: str, body: dict, principal):
    changes = {name: body[key] for key, name in _UPDATABLE.items() if key in body}
    record = reviews.update(principal, workspace_id=workspaceId, review_id=reviewId, **changes)
    return ok({"review": shaped(record)}, "Review updated")


def delete_review(workspaceId: str, reviewId: str):
    reviews.delete(workspace_id=workspaceId, review_id=reviewId)
    return deleted(reviewId, "Review deleted")


def raise_review_feedback(workspaceId: str, reviewId: str, body: dict, principal):
    raised, record = reviews.raise_feedback(principal, workspace_id=workspaceId, review_id=reviewId,
                                            title=body["title"], description=body.get("description"),
                                            severity=body.get("severity"))
    feedback = feedback_shape(raised, feedbacks.assignees_of(workspaceId, [raised.id])[raised.id],
                              principal.permissions)
    return ok({"feedback": feedback, "review": shaped(record)}, "Feedback raised from the review")
