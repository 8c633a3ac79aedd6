"""Workspaces: listWorkspaces, createWorkspace, getWorkspace, updateWorkspace, deleteWorkspace."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import deleted, iso
from models.identity import workspaces
from models.identity.workspaces import WorkspaceRecord


def workspace_shape(record: WorkspaceRecord) -> dict:
    shape = {"id": record.id, "name": record.name,
             "settings": {**record.settings, "dataRetentionDays": record.data_retention_days},
             "createdAt": iso(record.created_at), "updatedAt": iso(record.updated_at or record.created_at)}
    if record.role is not None:
        shape["role"] = record.role
    return shape


def list_workspaces(principal, limit: int = 20, offset: int = 0):
    page = workspaces.list_mine(principal, limit=limit, offset=offset)
    return ok({"workspaces": [workspace_shape(w) for w in page.items], "pagination": page.pagination()})


def create_workspace(body: dict, principal):
    record = workspaces.create(principal, name=body["name"], settings=body.get("settings"))
    return ok({"workspace": workspace_shape(record)}, "Workspace created; you are its owner")


def get_workspace(workspaceId: str, principal):
    record = workspaces.get(workspaceId, role=workspaces.role_of(workspaceId, principal.user_id))
    return ok({"workspace": workspace_shape(record)})


def update_workspace(workspaceId: str, body: dict, principal):
    workspaces.update(workspace_id=workspaceId, name=body.get("name"), settings=body.get("settings"))
    record = workspaces.get(workspaceId, role=workspaces.role_of(workspaceId, principal.user_id))
    return ok({"workspace": workspace_shape(record)}, "Workspace updated")


def delete_workspace(workspaceId: str, confirmName: str, principal):
    name = workspaces.delete(principal, workspace_id=workspaceId, confirm_name=confirmName)
    return deleted(workspaceId, "Workspace deleted, with everything in it", name=name)
