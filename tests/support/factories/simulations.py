"""Simulations' work done in the test's thread, as the simulation worker's threads do it."""
from __future__ import annotations

from models.kernel.db import session
from tests.support.threads import drain


def simulate(*, wait_s: float = 0.0, **settings) -> int:
    """Every due iteration claimed and worked on until none is due; with ``wait_s``, until none
    has been due for that long (a failed attempt is due again after a short delay). ``settings``
    are the Settings' fields (simulation_lease_s, stt_model_path...); the endpoint is the one the
    app was configured with. Returns how many claims were worked."""
    from api.simulation_worker import SimulationWorkers
    from core.settings import Settings
    return drain(SimulationWorkers(Settings(**{"simulation_lease_s": 0.4, **settings})), wait_s)


def simulation(actor, entity_id: str, *, name: str = "Simulation", script: list[str] | None = None,
               persona_ids: list[str] | None = None, suite_ids: list[str] | None = None,
               entity_type: str = "agent") -> str:
    """A queued simulation of the entity (a scripted caller unless ``persona_ids``); its id. Made
    as if an endpoint were configured (creation asks none), whatever the app's settings."""
    from models.kernel import chat_completions
    from models.simulations import simulations
    from models.simulations.simulations import Callers
    from tests.support.factories.identity import principal
    before = chat_completions.configured()
    chat_completions.configure(before or chat_completions.Endpoint("http://127.0.0.1:9/v1", None, "test", 1.0))
    try:
        with session():
            callers = Callers(persona_ids, [], None if persona_ids else (script or ["Hello.", "Goodbye."]))
            return simulations.create(principal(actor), workspace_id=actor.workspace_id, name=name,
                                      entity_type=entity_type, entity_id=entity_id, version_id=None, callers=callers,
                                      suite_ids=suite_ids).id
    finally:
        chat_completions.configure(before)
