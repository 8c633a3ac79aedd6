"""Resolving feedback: by hand (a status that counts as resolved, or reopening), or by the version
that closes it (an accepted solution), which also records a ``fixed_by`` reference to that version.
"""
from __future__ import annotations

from models.feedback import references, statuses
from models.feedback.tables import Feedback
from models.kernel.db import utcnow


def close_by_version(*, workspace_id: str, feedback_ids: list[str], version_id: str, user_id: str,
                     solution_id: str | None = None) -> list[dict]:
    """The workspace's feedback among ``feedback_ids`` resolved by ``version_id`` (in the caller's
    transaction): the first resolved status, who and when, the version and the solution; a
    ``fixed_by`` reference each. Returns ``[{id, number, title}]`` of those closed, by number, for
    the version's closedFeedbacks. Feedback resolved already is closed again by this version."""
    rows = list(Feedback.in_workspace(workspace_id, Feedback.id, Feedback.number, Feedback.title)
                .where(Feedback.id.in_(sorted(set(feedback_ids)))).order_by(Feedback.number).tuples())
    if not rows:
        return []
    now = utcnow()
    changes = {"status": statuses.first_resolved(workspace_id), "resolved": True, "resolved_at": now,
               "resolved_by": user_id, "closed_by_version_id": version_id, "updated_at": now}
    if solution_id is not None:
        changes["solution_id"] = solution_id
    Feedback.update(**changes).where((Feedback.workspace == workspace_id)
                                     & Feedback.id.in_([r[0] for r in rows])).execute()
    for feedback_id, _, _ in rows:
        references.add(workspace_id=workspace_id, feedback_id=feedback_id, entity_type="version",
                       entity_id=version_id, relation="fixed_by", created_by=user_id)
    return [{"id": feedback_id, "number": number, "title": title} for feedback_id, number, title in rows]
