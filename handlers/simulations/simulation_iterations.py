"""A simulation's iterations: listSimulationIterations, getSimulationIteration, postSimulationVerdicts,
raiseSimulationFeedback."""
from __future__ import annotations

from api.envelope import ok
from handlers.feedback.shapes import feedback_shape
from handlers.simulations.shapes import iteration_detail_shape, iteration_shape
from models.feedback import feedbacks
from models.simulations import iterations, reproductions, simulations
from models.simulations.iterations import Posted


def list_simulation_iterations(workspaceId: str, simulationId: str, limit: int = 20, offset: int = 0):
    simulation = simulations.get(workspace_id=workspaceId, simulation_id=simulationId)
    page = iterations.list_iterations(workspace_id=workspaceId, simulation_id=simulationId, limit=limit,
                                      offset=offset)
    return ok({"iterations": [iteration_shape(r, simulation) for r in page.items], "pagination": page.pagination()})


def get_simulation_iteration(workspaceId: str, simulationId: str, iterationId: str):
    simulation = simulations.get(workspace_id=workspaceId, simulation_id=simulationId)
    detail = iterations.get(workspace_id=workspaceId, simulation_id=simulationId, iteration_id=iterationId)
    return ok({"iteration": iteration_detail_shape(detail, simulation)})


def post_simulation_verdicts(workspaceId: str, simulationId: str, iterationId: str, body: dict):
    posted = [Posted(v["name"].strip(), v.get("assertionId"), v["passed"], v["reason"].strip())
              for v in body["verdicts"]]
    detail = iterations.post_verdicts(workspace_id=workspaceId, simulation_id=simulationId, iteration_id=iterationId,
                                      evaluator=body["evaluator"].strip(), verdicts=posted)
    simulation = simulations.get(workspace_id=workspaceId, simulation_id=simulationId)
    return ok({"iteration": iteration_detail_shape(detail, simulation)}, "Verdicts recorded")


def raise_simulation_feedback(workspaceId: str, simulationId: str, iterationId: str, body: dict, principal):
    raised = reproductions.raise_feedback(principal, workspace_id=workspaceId, simulation_id=simulationId,
                                          iteration_id=iterationId, title=body.get("title"),
                                          description=body.get("description"), severity=body.get("severity", 3))
    shaped = feedback_shape(raised, feedbacks.assignees_of(workspaceId, [raised.id])[raised.id], principal.permissions)
    return ok({"feedback": shaped}, "Feedback raised from the simulation")
