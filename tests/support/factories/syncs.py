"""Syncs of agents and workflows to a runtime, started and attempted through the domain as the API
and its worker do."""
from __future__ import annotations

from models.configs.entities import kind
from models.kernel.db import session
from models.syncs import syncs
from tests.support.factories.identity import Actor, principal
from tests.support.factories.integrations import integration


def runtime(actor: Actor, base_url: str = "https://runtime.example.com/configs",
            secret: str = "runtime-secret-0000", **fields) -> str:
    """A runtime integration of the actor's workspace; its id."""
    return integration(actor, kind="runtime", base_url=base_url, secret=secret, **fields)


def sync(actor: Actor, entity_id: str, integration_id: str | None = None, *, entity_type: str = "agent",
         version: int | None = None) -> str:
    """A queued sync of the entity's version (its live one by default) to ``integration_id`` (a new
    runtime integration when None); its id."""
    integration_id = integration_id or runtime(actor)
    with session():
        return syncs.start(kind(entity_type), principal(actor), workspace_id=actor.workspace_id, entity_id=entity_id,
                           integration_id=integration_id, version=version).id


def run_syncs(timeout_s: float = 5.0, retry_base_s: float = 0.0, lease_s: float = 60.0) -> list[tuple[str, str]]:
    """Every due sync attempted, as a worker does, until none is due; (sync id, status after) of each attempt."""
    from api.sync_worker import attempt
    done = []
    while True:
        with session():
            job = syncs.claim(lease_s)
        if job is None:
            return done
        done.append((job.sync_id, attempt(job, timeout_s=timeout_s, retry_base_s=retry_base_s)))
