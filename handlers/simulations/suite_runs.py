"""A unit-test suite's runs: runSuite, listSuiteRuns."""
from __future__ import annotations

from api.envelope import ok
from handlers.simulations.shapes import simulation_shape
from handlers.simulations.simulations import voice_options
from models.simulations import suite_runs


def run_suite(workspaceId: str, suiteId: str, body: dict, principal):
    record = suite_runs.run(
        principal, workspace_id=workspaceId, suite_id=suiteId, entity_type=body["entityType"],
        entity_id=body["entityId"], version_id=body.get("versionId"), persona_id=body.get("personaId"),
        scenario=body.get("scenario"), script=body.get("script"), conversations=body.get("conversations", 1),
        max_turns=body.get("maxTurns", 20), voice=voice_options(body.get("voice")))
    return ok({"simulation": simulation_shape(record)}, "Suite run queued")


def list_suite_runs(workspaceId: str, suiteId: str, limit: int = 20, offset: int = 0):
    page = suite_runs.list_runs(workspace_id=workspaceId, suite_id=suiteId, limit=limit, offset=offset)
    return ok({"simulations": [simulation_shape(r) for r in page.items], "pagination": page.pagination()})
