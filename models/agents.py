"""Agents: a name and a configuration (prompt, first message, voice, language, model, tools...),
versioned (models.versioning). An agent that a workflow routes to cannot be deleted."""
from __future__ import annotations

from .errors import Conflict
from .versioning import VersionedEntity


class Agent(VersionedEntity):
    KIND = "agent"

    class Meta:
        indexes = ((("workspace", "created_at", "id"), False),)

    @classmethod
    def before_delete(cls, workspace_id: str, entity_id: str) -> None:
        from .workflows import workflows_using
        if users := workflows_using(workspace_id, entity_id):
            names = ", ".join(f"{name!r} ({workflow_id})" for workflow_id, name in users[:10])
            more = f" and {len(users) - 10} more" if len(users) > 10 else ""
            several = len(users) > 1
            raise Conflict(f"The agent is used by the workflow{'s' if several else ''} {names}{more}; "
                           f"remove the agent from {'them' if several else 'it'} first.")
