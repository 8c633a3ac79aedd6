"""What keeps an agent or workflow from being deleted beyond the configurations that name it
(models.configs.references): the one list.

Each user is ``(kind, workspace_id, entity_id) -> [descriptions]`` of what still uses the entity
(a campaign that calls with it, a phone number it answers), asked by ``models.configs.entities.delete``
with the entity's row locked; the configs package imports none of them. What a new group makes
depend on an agent is added here.
"""
from __future__ import annotations

from models.campaigns import campaigns
from models.configs import entities
from models.configs.tables import VersionedEntity
from models.optimization import runs
from models.telephony import numbers

# A campaign that is not over (draft, scheduled, running, paused) calls with its agent or workflow.
# A number whose calls, in or after hours, it answers. An optimization run generating solutions
# for the agent, or waiting for their review.
USERS = (campaigns.users_of, numbers.answered_by, runs.users_of)


def delete(model: type[VersionedEntity], *, workspace_id: str, entity_id: str) -> None:
    """The entity deleted, unless something uses it (Conflict naming each)."""
    entities.delete(model, workspace_id=workspace_id, entity_id=entity_id, users=USERS)
