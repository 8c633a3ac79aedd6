"""Workflows: createWorkflow, listWorkflows, getWorkflow, updateWorkflow, deleteWorkflow (shared with agents in
handlers.entities)."""
from models.configs.tables import Workflow

from .entities import EntityHandlers

_workflows = EntityHandlers(Workflow, "workflow", "workflows", "Workflow")


def create_workflow(body: dict, workspaceId: str, principal):
    return _workflows.create(body, workspaceId, principal)


def list_workflows(workspaceId: str, limit: int = 20, offset: int = 0):
    return _workflows.list(workspaceId, limit, offset)


def get_workflow(workflowId: str, workspaceId: str):
    return _workflows.get(workflowId, workspaceId)


def update_workflow(workflowId: str, body: dict, workspaceId: str, principal):
    return _workflows.update(workflowId, body, workspaceId, principal)


def delete_workflow(workflowId: str, workspaceId: str):
    return _workflows.delete(workflowId, workspaceId)
