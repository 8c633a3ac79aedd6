"""A unit-test suite run against a version: a simulation of one caller (a persona, optionally in a
scenario, or a script) judged by that suite alone, so that a suite's history is the list of its
runs, each with its conversations and verdicts."""
from __future__ import annotations

from models.assertions import suites
from models.identity.principal import Principal
from models.kernel.errors import InvalidInput
from models.kernel.pagination import Page
from models.simulations import simulations
from models.simulations.simulations import Callers, SimulationRecord


def run(principal: Principal, *, workspace_id: str, suite_id: str, entity_type: str, entity_id: str,
        version_id: str | None, persona_id: str | None, scenario: dict | None, script: list[str] | None,
        conversations: int = 1, max_turns: int = 20, voice: dict | None = None) -> SimulationRecord:
    suite = suites.get_suite(workspace_id=workspace_id, suite_id=suite_id)
    if scenario is not None and persona_id is None:
        raise InvalidInput("scenario is told to a persona: give personaId with it.")
    callers = Callers([persona_id] if persona_id is not None else None, [scenario] if scenario else [], script)
    return simulations.create(principal, workspace_id=workspace_id, name=suite.name, entity_type=entity_type,
                              entity_id=entity_id, version_id=version_id, callers=callers,
                              conversations=conversations, max_turns=max_turns, suite_ids=[suite_id], voice=voice,
                              suite_id=suite_id)


def list_runs(*, workspace_id: str, suite_id: str, limit: int, offset: int) -> Page[SimulationRecord]:
    """Newest first; NotFound for a suite not of the workspace."""
    suites.get_suite(workspace_id=workspace_id, suite_id=suite_id)
    return simulations.list_simulations(workspace_id=workspace_id, limit=limit, offset=offset, suite_id=suite_id)
