"""Solutions: getSolution, acceptSolution, rejectSolution; and the wire shape of a solution, which
the runs' answers carry too."""
from __future__ import annotations

from api.envelope import ok
from handlers.feedback.shapes import feedback_shape
from handlers.wire import iso
from models.feedback import feedbacks
from models.optimization import solutions
from models.optimization.solutions import SolutionRecord


def solution_shape(record: SolutionRecord, feedback_ids: list[str], records: dict, assignees: dict,
                   permissions) -> dict:
    return {
        "id": record.id, "runId": record.run_id, "title": record.title, "change": record.change,
        "explanation": record.explanation, "displayOrder": record.display_order, "decision": record.decision,
        "patchDecisions": record.patch_decisions or {}, "versionId": record.version_id,
        "createdAt": iso(record.created_at), "reviewedAt": iso(record.reviewed_at), "feedbackIds": feedback_ids,
        "feedbacks": [feedback_shape(records[f], assignees.get(f, []), permissions)
                      for f in feedback_ids if f in records],
    }


def shaped(workspace_id: str, records: list[SolutionRecord], feedback_of: dict, permissions) -> list[dict]:
    """Solutions with their feedback: the feedback read and its assignees, two statements for all."""
    ids = {f for record in records for f in feedback_of.get(record.id, ())}
    found = feedbacks.by_ids(workspace_id, ids)
    assignees = feedbacks.assignees_of(workspace_id, found)
    return [solution_shape(r, feedback_of.get(r.id, []), found, assignees, permissions) for r in records]


def _one(workspace_id: str, record: SolutionRecord, principal) -> dict:
    _, feedback_of = solutions.of_runs(workspace_id, [record.run_id])
    return shaped(workspace_id, [record], feedback_of, principal.permissions)[0]


def get_solution(workspaceId: str, solutionId: str, principal):
    record = solutions.get(workspace_id=workspaceId, solution_id=solutionId)
    return ok({"solution": _one(workspaceId, record, principal)})


def accept_solution(workspaceId: str, solutionId: str, principal, body: dict | None = None):
    record = solutions.accept(principal, workspace_id=workspaceId, solution_id=solutionId,
                              note=(body or {}).get("note"))
    return ok({"solution": _one(workspaceId, record, principal)}, "Solution accepted: a new version of the agent")


def reject_solution(workspaceId: str, solutionId: str, principal, body: dict | None = None):
    record = solutions.reject(principal, workspace_id=workspaceId, solution_id=solutionId,
                              note=(body or {}).get("note"))
    return ok({"solution": _one(workspaceId, record, principal)}, "Solution rejected")
