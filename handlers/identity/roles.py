"""Roles: listRoles, createRole, getRole, updateRole, deleteRole."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import deleted, iso
from models.identity import roles
from models.identity.roles import RoleRecord


def role_shape(record: RoleRecord) -> dict:
    return {"id": record.id, "name": record.name, "description": record.description, "builtIn": record.built_in,
            "permissions": record.permissions, "memberCount": record.member_count,
            "createdAt": iso(record.created_at), "updatedAt": iso(record.updated_at)}


def list_roles(workspaceId: str, limit: int = 20, offset: int = 0):
    page = roles.list_roles(workspace_id=workspaceId, limit=limit, offset=offset)
    return ok({"roles": [role_shape(r) for r in page.items], "pagination": page.pagination()})


def create_role(workspaceId: str, body: dict, principal):
    record = roles.create_role(principal, workspace_id=workspaceId, name=body["name"],
                               permissions=body["permissions"], description=body.get("description"))
    return ok({"role": role_shape(record)}, "Role created")


def get_role(workspaceId: str, roleId: str):
    return ok({"role": role_shape(roles.get_role(workspace_id=workspaceId, role_id=roleId))})


def update_role(workspaceId: str, roleId: str, body: dict, principal):
    changes = {"description": body["description"]} if "description" in body else {}
    record = roles.update_role(principal, workspace_id=workspaceId, role_id=roleId, name=body.get("name"),
                               permissions=body.get("permissions"), **changes)
    return ok({"role": role_shape(record)}, "Role updated; it applies from its members' next request")


def delete_role(workspaceId: str, roleId: str):
    roles.delete_role(workspace_id=workspaceId, role_id=roleId)
    return deleted(roleId, "Role deleted")
