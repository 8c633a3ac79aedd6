"""Simulations' work done in the test's thread, as the simulation worker's threads do it."""
from __future__ import annotations

import time

from models.kernel.db import session


def simulate(*, wait_s: float = 0.0, **settings) -> int:
    """Every due iteration claimed and worked on until none is due; with ``wait_s``, until none
    has been due for that long (a failed attempt is due again after a short delay). ``settings``
    are the Settings' fields (simulation_lease_s, stt_model_path...); the endpoint is the one the
    app was configured with. Returns how many claims were worked."""
    from api.simulation_worker import SimulationWorkers
    from core.settings import Settings
    worker = SimulationWorkers(Settings(**{"simulation_lease_s": 0.4, **settings}))
    worked, idle_since = 0, time.monotonic()
    while True:
        with session():
            job = worker.claim()
        if job is not None:
            worker.work(job)
            worked, idle_since = worked + 1, time.monotonic()
        elif time.monotonic() - idle_since >= wait_s:
            return worked
        else:
            time.sleep(0.02)
