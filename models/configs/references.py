"""What one configuration may name of another, and what may not be deleted while it is named.

A workflow's nodes name agents: a save (a version, a branch commit, a merge) must name agents of
the workspace, locked until it commits so that none is deleted under it; an agent that a workflow
"uses" cannot be deleted. A workflow uses an agent when its head, its published version or the
head of one of its open branches names it: those are the configurations that can still go live.
Which agents each version names is kept in ``workflow_agent``, written with the version, so that
deleting an agent asks one indexed question instead of reading every workflow's configurations.
"""
from __future__ import annotations

from models.configs.schemas import agent_ids
from models.configs.tables import OPEN, Agent, Branch, VersionedEntity, Workflow, WorkflowAgent
from models.kernel.db import is_postgres
from models.kernel.errors import Conflict, InvalidInput


def check_references(model: type[VersionedEntity], workspace_id: str, config: dict) -> None:
    """InvalidInput when ``config`` names something of the workspace that does not exist."""
    if model is not Workflow:
        return
    named = agent_ids(config)
    # Locked until the save commits, so that none of them is deleted under it.
    if missing := [i for i in named if i not in lock_for_share(Agent, workspace_id, named)]:
        raise InvalidInput(f"config.nodes: no agent {', '.join(missing)} in this workspace.")


def version_saved(model: type[VersionedEntity], workspace_id: str, entity_id: str, version_id: str,
                  config: dict) -> None:
    """In the saving transaction, once the version is inserted: what it names, recorded."""
    if model is not Workflow:
        return
    rows = [{"version": version_id, "workflow_id": entity_id, "agent_id": agent_id}
            for agent_id in agent_ids(config)]
    if rows:
        WorkflowAgent.insert_many(rows).execute()


def before_delete(model: type[VersionedEntity], workspace_id: str, entity_id: str) -> None:
    """Conflict when something still uses the entity; runs with the entity's row locked."""
    if model is not Agent:
        return
    if users := workflows_using(workspace_id, entity_id):
        names = ", ".join(f"{name!r} ({workflow_id})" for workflow_id, name in users[:10])
        more = f" and {len(users) - 10} more" if len(users) > 10 else ""
        several = len(users) > 1
        raise Conflict(f"The agent is used by the workflow{'s' if several else ''} {names}{more}; "
                       f"remove the agent from {'them' if several else 'it'} first.")


def lock_for_share(model: type[VersionedEntity], workspace_id: str, ids: list[str]) -> set[str]:
    """Which of ``ids`` exist in the workspace, held until the transaction ends so that none of
    them is deleted before it commits (on SQLite the write lock already excludes that)."""
    if not ids:
        return set()
    query = model.in_workspace(workspace_id, model.id).where(model.id.in_(ids))
    if is_postgres():
        query = query.for_update("FOR SHARE")
    return {row[0] for row in query.tuples()}


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
