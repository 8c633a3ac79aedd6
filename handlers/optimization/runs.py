"""Optimization runs: createOptimizationRun, listOptimizationRuns, getOptimizationRun,
deleteOptimizationRun, addRunSolutions, finishOptimizationRun."""
from __future__ import annotations

from api.envelope import ok
from handlers.optimization.solutions import shaped
from handlers.wire import deleted, iso
from models.optimization import runs, solutions
from models.optimization.runs import RunRecord


def run_shape(record: RunRecord, solution_list: list[dict]) -> dict:
    return {
        "id": record.id, "workspaceId": record.workspace_id, "agentId": record.agent_id,
        "agentName": record.agent_name, "status": record.status, "optimizer": record.optimizer,
        "instructions": record.instructions, "baseVersionId": record.base_version_id,
        "feedbackCount": record.feedback_count, "solutionCount": record.solution_count,
        "acceptedCount": record.accepted_count, "rejectedCount": record.rejected_count, "error": record.error,
        "dropped": record.dropped or [], "createdBy": record.created_by, "createdAt": iso(record.created_at),
        "updatedAt": iso(record.updated_at), "completedAt": iso(record.completed_at), "solutions": solution_list,
    }


def _shaped(workspace_id: str, records: list[RunRecord], permissions) -> list[dict]:
    """Runs with their solutions and those solutions' feedback: four statements for a whole page."""
    by_run, feedback_of = solutions.of_runs(workspace_id, [r.id for r in records])
    every = shaped(workspace_id, [s for r in records for s in by_run.get(r.id, [])], feedback_of, permissions)
    by_id = {s["id"]: s for s in every}
    return [run_shape(r, [by_id[s.id] for s in by_run.get(r.id, [])]) for r in records]


def _one(workspace_id: str, record: RunRecord, principal) -> dict:
    return _shaped(workspace_id, [record], principal.permissions)[0]


def create_optimization_run(workspaceId: str, body: dict, principal):
    record = runs.create(principal, workspace_id=workspaceId, agent_id=body["agentId"],
                         feedback_ids=body.get("feedbackIds"), optimizer=body.get("optimizer", "builtin"),
                         instructions=body.get("instructions"))
    message = "Optimization run failed" if record.status == "failed" else "Optimization run started"
    return ok({"run": _one(workspaceId, record, principal)}, message)


def list_optimization_runs(workspaceId: str, principal, limit: int = 20, offset: int = 0, sortBy: str = "createdAt",
                           sortOrder: str = "desc", search: str | None = None, filters: str | None = None):
    page = runs.list_runs(workspace_id=workspaceId, limit=limit, offset=offset, sort_by=sortBy, sort_order=sortOrder,
                          search=search, filters=runs.parse_filters(filters))
    return ok({"runs": _shaped(workspaceId, page.items, principal.permissions), "pagination": page.pagination(),
               "summary": page.summary})


def get_optimization_run(workspaceId: str, runId: str, principal):
    return ok({"run": _one(workspaceId, runs.get(workspace_id=workspaceId, run_id=runId), principal)})


def delete_optimization_run(workspaceId: str, runId: str):
    runs.delete(workspace_id=workspaceId, run_id=runId)
    return deleted(runId, "Optimization run deleted, with its solutions; versions they made stay")


def add_run_solutions(workspaceId: str, runId: str, body: dict, principal):
    record = solutions.add_external(workspace_id=workspaceId, run_id=runId, proposals=body["solutions"],
                                    user_id=principal.user_id)
    return ok({"run": _one(workspaceId, record, principal)}, "Solutions added")


def finish_optimization_run(workspaceId: str, runId: str, principal, body: dict | None = None):
    record = runs.finish_external(workspace_id=workspaceId, run_id=runId, error=(body or {}).get("error"))
    return ok({"run": _one(workspaceId, record, principal)}, f"Optimization run {record.status}")
