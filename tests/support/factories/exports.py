"""Whole-workspace exports, started and written through the domain as the API and its worker do."""
from __future__ import annotations

from models.exports import exports
from models.kernel.db import session
from tests.support.factories.identity import Actor, principal


def export(actor: Actor) -> str:
    """A queued export of the actor's workspace (started by its owner, who holds calls:pii); its id."""
    with session():
        return exports.start(principal(actor), workspace_id=actor.workspace_id).id


def run_exports(lease_s: float = 60.0) -> list[str]:
    """Every due export written and completed, as a worker does, one after another; their ids."""
    done = []
    while True:
        with session():
            job = exports.claim(lease_s)
            if job is None:
                return done
            exports.complete(job, exports.write(job))
        done.append(job.export_id)
