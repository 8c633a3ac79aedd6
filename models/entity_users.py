"""What keeps an agent or workflow from being deleted beyond the configurations that name it
(models.configs.references): the one list.

Each user is ``(kind, workspace_id, entity_id) -> [descriptions]`` of what still uses the entity
(a campaign that calls with it, a phone number it answers), asked by ``models.configs.entities.delete``
with the entity's row locked; the configs package imports none of them. What a new group makes
depend on an agent is added here; what merely refers to one and goes with it, to ``FORGOTTEN``.
"""
from __future__ import annotations

from models.assertions import assignments
from models.campaigns import campaigns
from models.configs import entities
from models.configs.tables import VersionedEntity
from models.kernel.db import database
from models.optimization import runs
from models.telephony import numbers

# A campaign that is not over (draft, scheduled, running, paused) calls with its agent or workflow.
# A number whose calls, in or after hours, it answers. An optimization run generating solutions
# for the agent, or waiting for their review.
USERS = (campaigns.users_of, numbers.answered_by, runs.users_of)
# What goes with the entity, in its deletion's transaction, each ``(kind, workspace_id, entity_id)``:
# its assignments to unit-test suites (the suites stay).
FORGOTTEN = (assignments.forget,)


def delete(model: type[VersionedEntity], *, workspace_id: str, entity_id: str) -> None:
    """The entity deleted, unless something uses it (Conflict naming each), with what goes with it."""
    with database.atomic():
        entities.delete(model, workspace_id=workspace_id, entity_id=entity_id, users=USERS)
        for forget in FORGOTTEN:
            forget(model.KIND, workspace_id, entity_id)
