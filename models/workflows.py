"""Workflows: nodes and edges that route a call between agents, versioned (models.versioning).

A workflow "uses" an agent when its head, its published version or the head of one of its open
branches names it: those are the configurations that can still go live. Which agents each version
names is kept in ``workflow_agent``, written with the version, so that deleting an agent asks one
indexed question instead of reading every workflow's configurations.
"""
from __future__ import annotations

from peewee import CharField, ForeignKeyField

from .branches import OPEN, Branch
from .configs import agent_ids
from .db import BaseModel
from .errors import InvalidInput
from .versioning import Version, VersionedEntity, lock_for_share


class Workflow(VersionedEntity):
    KIND = "workflow"

    class Meta:
        indexes = ((("workspace", "created_at", "id"), False),)

    @classmethod
    def check_references(cls, workspace_id: str, config: dict) -> None:
        from .agents import Agent
        named = agent_ids(config)
        # Locked until the save commits, so that none of them is deleted under it.
        if missing := [i for i in named if i not in lock_for_share(Agent, workspace_id, named)]:
            raise InvalidInput(f"config.nodes: no agent {', '.join(missing)} in this workspace.")

    @classmethod
    def version_saved(cls, workspace_id: str, entity_id: str, version_id: str, config: dict) -> None:
        rows = [{"version": version_id, "workflow_id": entity_id, "agent_id": agent_id}
                for agent_id in agent_ids(config)]
        if rows:
            WorkflowAgent.insert_many(rows).execute()


class WorkflowAgent(BaseModel):
    """An agent that a version of a workflow names."""
    version = ForeignKeyField(Version, on_delete="CASCADE", backref="+")
    workflow_id = CharField()
    agent_id = CharField(index=True)


def workflows_using(workspace_id: str, agent_id: str) -> list[tuple[str, str]]:
    """(id, name) of the workflows whose live, head or open-branch configuration names the agent."""
    open_heads = Branch.in_workspace(workspace_id, Branch.head_version_id).where(
        (Branch.entity_type == Workflow.KIND) & (Branch.entity_id == Workflow.id) & (Branch.status == OPEN))
    return list(
        Workflow.in_workspace(workspace_id, Workflow.id, Workflow.name).distinct()
        .join(WorkflowAgent, on=(WorkflowAgent.workflow_id == Workflow.id))
        .where((WorkflowAgent.agent_id == agent_id)
               & ((WorkflowAgent.version == Workflow.head_version_id)
                  | (WorkflowAgent.version == Workflow.published_version_id)
                  | WorkflowAgent.version.in_(open_heads)))
        .order_by(Workflow.name, Workflow.id).tuples())
