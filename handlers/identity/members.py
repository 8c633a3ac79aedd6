"""Members: listMembers, getMember, updateMemberRole, removeMember, leaveWorkspace."""
from __future__ import annotations

from api.audit_trail import note
from api.envelope import ok
from handlers.wire import deleted, iso
from models.identity import members
from models.identity.members import MemberRecord


def member_shape(record: MemberRecord) -> dict:
    return {"userId": record.user_id, "email": record.email, "displayName": record.display_name,
            "isActive": record.is_active, "role": record.role, "roleName": record.role_name or record.role,
            "joinedAt": iso(record.joined_at)}


def list_members(workspaceId: str, limit: int = 20, offset: int = 0):
    page = members.list_members(workspace_id=workspaceId, limit=limit, offset=offset)
    return ok({"members": [member_shape(m) for m in page.items], "pagination": page.pagination()})


def get_member(workspaceId: str, userId: str):
    return ok({"member": member_shape(members.get_member(workspace_id=workspaceId, user_id=userId))})


def update_member_role(workspaceId: str, userId: str, body: dict, principal):
    record = members.change_role(principal, workspace_id=workspaceId, user_id=userId, role=body["role"])
    return ok({"member": member_shape(record)}, "Role changed; it applies from the member's next request")


def remove_member(workspaceId: str, userId: str, principal):
    keys = members.remove(principal, workspace_id=workspaceId, user_id=userId)
    note(deletedApiKeys=keys)
    return deleted(userId, "Member removed; their API keys of this workspace are deleted", userId=userId,
                   deletedApiKeys=keys)


def leave_workspace(workspaceId: str, principal):
    keys = members.remove(principal, workspace_id=workspaceId, user_id=principal.user_id, leaving=True)
    note(deletedApiKeys=keys)
    return deleted(principal.user_id, "You left the workspace", userId=principal.user_id, deletedApiKeys=keys)
