"""Simulations: createSimulation, listSimulations, getSimulation, updateSimulation, deleteSimulation,
cancelSimulation, rerunSimulation, getSimulationRegressions."""
from __future__ import annotations

from api.envelope import ok
from handlers.simulations.shapes import simulation_shape
from handlers.wire import deleted
from models.simulations import simulations
from models.simulations.simulations import Callers, Change


def create_simulation(workspaceId: str, body: dict, principal):
    callers = Callers(body.get("personaIds"), body.get("scenarios") or [], body.get("script"))
    record = simulations.create(
        principal, workspace_id=workspaceId, name=body["name"].strip(), entity_type=body["entityType"],
        entity_id=body["entityId"], version_id=body.get("versionId"), callers=callers,
        conversations=body.get("conversations", 1), max_turns=body.get("maxTurns", 20),
        suite_ids=body.get("suiteIds"), voice=voice_options(body.get("voice")))
    return ok({"simulation": simulation_shape(record)}, "Simulation queued")


def voice_options(voice: dict | None) -> dict | None:
    if voice is None:
        return None
    return {"telephone": bool(voice.get("telephone", False)), "snrDb": voice.get("snrDb")}


def list_simulations(workspaceId: str, limit: int = 20, offset: int = 0, entityType: str | None = None,
                     entityId: str | None = None, status: str | None = None):
    page = simulations.list_simulations(workspace_id=workspaceId, limit=limit, offset=offset, entity_type=entityType,
                                        entity_id=entityId, status=status)
    return ok({"simulations": [simulation_shape(r) for r in page.items], "pagination": page.pagination()})


def get_simulation(workspaceId: str, simulationId: str):
    return ok({"simulation": simulation_shape(simulations.get(workspace_id=workspaceId, simulation_id=simulationId))})


def update_simulation(workspaceId: str, simulationId: str, body: dict):
    record = simulations.rename(workspace_id=workspaceId, simulation_id=simulationId, name=body["name"].strip())
    return ok({"simulation": simulation_shape(record)}, "Simulation renamed")


def delete_simulation(workspaceId: str, simulationId: str):
    simulations.delete(workspace_id=workspaceId, simulation_id=simulationId)
    return deleted(simulationId, "Simulation deleted")


def cancel_simulation(workspaceId: str, simulationId: str):
    record = simulations.cancel(workspace_id=workspaceId, simulation_id=simulationId)
    return ok({"simulation": simulation_shape(record)}, "Simulation cancelled")


def rerun_simulation(workspaceId: str, simulationId: str, body: dict, principal):
    name = body.get("name")
    record = simulations.rerun(principal, workspace_id=workspaceId, simulation_id=simulationId,
                               version_id=body.get("versionId"), name=name.strip() if name else None)
    return ok({"simulation": simulation_shape(record)}, "Simulation queued")


def _change_shape(change: Change) -> dict:
    return {"assertionId": change.assertion_id, "suiteId": change.suite_id, "name": change.name, "kind": change.kind,
            "before": change.before._asdict(), "after": change.after._asdict()}


def get_simulation_regressions(workspaceId: str, simulationId: str, baselineId: str | None = None):
    found = simulations.regressions(workspace_id=workspaceId, simulation_id=simulationId, baseline_id=baselineId)
    return ok({"baseline": simulation_shape(found.baseline), "simulation": simulation_shape(found.current),
               "regressions": [_change_shape(c) for c in found.regressions],
               "fixed": [_change_shape(c) for c in found.fixed]})
