"""Roles: the built-in four (models.identity.permissions.ROLES) and each workspace's custom roles.

A membership names its role by the built-in role's name or by the custom role's id. The
credential lookup (models.identity.credentials) joins the custom role on every request, so a change of a
custom role's permissions applies to its members' tokens and keys on their next request; an API
key keeps its frozen set, intersected with whatever the role now holds.

Nobody grants more than they hold: a custom role's permissions, a role given to a member or an
invitation, must all be within the caller's own effective permissions (``require_within``).
"""
from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from peewee import fn

from models.identity.permissions import CATALOG, ROLES, ordered, unknown
from models.identity.principal import Principal
from models.identity.tables import Invitation, Membership, WorkspaceRole
from models.kernel.db import database, utcnow
from models.kernel.errors import Conflict, Forbidden, InvalidInput, NotFound
from models.kernel.pagination import Page
from models.kernel.scoping import Workspace

MAX_CUSTOM_ROLES = 50
NAME_MAX_CHARS = 64


class RoleRecord(NamedTuple):
    id: str  # a built-in role's name, or a custom role's id
    name: str
    description: str | None
    built_in: bool
    permissions: list[str]
    member_count: int
    created_at: datetime | None
    updated_at: datetime | None


_BUILT_IN_DESCRIPTIONS = {
    "owner": "Everything, including deleting the workspace and managing its credits.",
    "admin": "Everything but deleting the workspace and managing its credits.",
    "member": "Works with the workspace's resources; does not manage its people, roles or money.",
    "viewer": "Reads the workspace's resources.",
}


def permissions_of(role: str, custom_permissions=None) -> frozenset[str]:
    """What a membership's ``role`` grants: a built-in role's set, or the custom role's own list
    (``custom_permissions``, as the credential lookup read it)."""
    if role in ROLES:
        return ROLES[role]
    return frozenset(custom_permissions or ()) & _CATALOG


_CATALOG = frozenset(CATALOG)


def require_within(principal: Principal, permissions, what: str) -> None:
    """Forbidden naming the permissions of ``what`` the caller does not hold itself."""
    beyond = ordered(set(permissions) - principal.permissions)
    if beyond:
        shown = ", ".join(beyond[:5]) + (f" and {len(beyond) - 5} more" if len(beyond) > 5 else "")
        raise Forbidden(f"{what} would grant permissions the caller does not hold: {shown}.")


def resolve(workspace_id: str, role: str, *, field: str = "role") -> tuple[str, frozenset[str]]:
    """A role as a request names it (a built-in name, or a custom role's id or name) → (the value a
    membership stores, its permissions). InvalidInput naming ``field`` when there is no such role."""
    if role in ROLES:
        return role, ROLES[role]
    found = (WorkspaceRole.in_workspace(workspace_id, WorkspaceRole.id, WorkspaceRole.permissions)
             .where((WorkspaceRole.id == role) | (WorkspaceRole.name == role)).tuples().first())
    if found is None:
        raise InvalidInput(f"{field} must be owner, admin, member, viewer, or a custom role of this workspace; "
                           f"{role!r} is none of them.")
    return found[0], permissions_of(found[0], found[1])


def granted_by(workspace_id: str, role: str) -> frozenset[str]:
    """What a stored role value grants in ``workspace_id`` now."""
    if role in ROLES:
        return ROLES[role]
    custom = WorkspaceRole.in_workspace(workspace_id, WorkspaceRole.permissions).where(WorkspaceRole.id == role).first()
    return permissions_of(role, custom.permissions if custom else None)


def name_of(workspace_id: str, role: str) -> str:
    """A stored role value's display name."""
    if role in ROLES:
        return role
    found = WorkspaceRole.in_workspace(workspace_id, WorkspaceRole.name).where(WorkspaceRole.id == role).scalar()
    return found or role


def _checked_permissions(permissions: list[str]) -> list[str]:
    if bad := unknown(permissions):
        raise InvalidInput(f"permissions lists what is not in the catalog (GET /permissions): {', '.join(bad[:5])}.")
    return ordered(permissions)


def _lock_names(workspace_id: str) -> None:
    """The workspace's row orders concurrent creations and renames, so that the cap and the
    names hold (PostgreSQL; SQLite has one writer at a time anyway)."""
    Workspace.update(id=Workspace.id).where(Workspace.id == workspace_id).execute()


def _checked_name(workspace_id: str, name: str, *, except_id: str | None = None) -> str:
    name = name.strip()
    if not 1 <= len(name) <= NAME_MAX_CHARS:
        raise InvalidInput(f"name must be 1 to {NAME_MAX_CHARS} characters once trimmed; {len(name)} given.")
    if name.casefold() in ROLES:
        raise InvalidInput(f"name {name!r} is a built-in role's; choose another.")
    # Compared here, not in SQL: SQLite's LOWER folds ASCII only. A workspace has at most
    # MAX_CUSTOM_ROLES names to read, under the workspace's row lock that the callers hold.
    taken = WorkspaceRole.in_workspace(workspace_id, WorkspaceRole.name).where(WorkspaceRole.id != (except_id or ""))
    if any(other.casefold() == name.casefold() for other in taken.scalars()):
        raise Conflict(f"This workspace already has a role named {name!r}.")
    return name


def _member_counts(workspace_id: str) -> dict[str, int]:
    rows = (Membership.select(Membership.role, fn.COUNT(Membership.id))
            .where(Membership.workspace == workspace_id).group_by(Membership.role).tuples())
    return dict(rows)


def _custom_record(row: WorkspaceRole, count: int) -> RoleRecord:
    return RoleRecord(row.id, row.name, row.description, False, list(row.permissions), count,
                      row.created_at, row.updated_at)


def list_roles(*, workspace_id: str, limit: int, offset: int) -> Page[RoleRecord]:
    """The built-in roles first, then the custom ones by name: two statements whatever the page."""
    counts = _member_counts(workspace_id)
    built_in = [RoleRecord(name, name, _BUILT_IN_DESCRIPTIONS[name], True, ordered(permissions),
                           counts.get(name, 0), None, None) for name, permissions in ROLES.items()]
    custom = list(WorkspaceRole.in_workspace(workspace_id).order_by(WorkspaceRole.name, WorkspaceRole.id))
    everything = built_in + [_custom_record(row, counts.get(row.id, 0)) for row in custom]
    return Page(items=everything[offset:offset + limit], total=len(everything), limit=limit, offset=offset)


def get_role(*, workspace_id: str, role_id: str) -> RoleRecord:
    if role_id in ROLES:
        count = Membership.select().where((Membership.workspace == workspace_id) & (Membership.role == role_id)).count()
        return RoleRecord(role_id, role_id, _BUILT_IN_DESCRIPTIONS[role_id], True, ordered(ROLES[role_id]),
                          count, None, None)
    row = WorkspaceRole.in_workspace(workspace_id).where(WorkspaceRole.id == role_id).first()
    if row is None:
        raise NotFound(f"No role {role_id} in this workspace.")
    count = Membership.select().where((Membership.workspace == workspace_id) & (Membership.role == row.id)).count()
    return _custom_record(row, count)


def create_role(principal: Principal, *, workspace_id: str, name: str, permissions: list[str],
                description: str | None = None) -> RoleRecord:
    permissions = _checked_permissions(permissions)
    require_within(principal, permissions, "This role")
    with database.atomic():
        _lock_names(workspace_id)
        if WorkspaceRole.in_workspace(workspace_id).count() >= MAX_CUSTOM_ROLES:
            raise Conflict(f"A workspace has at most {MAX_CUSTOM_ROLES} custom roles; delete one first.")
        name = _checked_name(workspace_id, name)
        now = utcnow()
        row = WorkspaceRole.create(workspace=workspace_id, name=name, description=description,
                                   permissions=permissions, created_by=principal.user_id, created_at=now, updated_at=now)
    return _custom_record(row, 0)


def _editable(workspace_id: str, role_id: str) -> WorkspaceRole:
    if role_id in ROLES:
        raise InvalidInput(f"The built-in role {role_id} cannot be changed or deleted; make a custom role instead.")
    row = WorkspaceRole.in_workspace(workspace_id).where(WorkspaceRole.id == role_id).first()
    if row is None:
        raise NotFound(f"No role {role_id} in this workspace.")
    return row


_UNSET = object()


def update_role(principal: Principal, *, workspace_id: str, role_id: str, name: str | None = None,
                permissions: list[str] | None = None, description=_UNSET) -> RoleRecord:
    """Applies to the role's members from their next request."""
    with database.atomic():
        if name is not None:
            _lock_names(workspace_id)
        row = _editable(workspace_id, role_id)
        # Editing a role changes what its members hold: the caller must hold all of it, before and after.
        require_within(principal, row.permissions, "Changing this role")
        changes = {"updated_at": utcnow()}
        if name is not None:
            changes["name"] = _checked_name(workspace_id, name, except_id=role_id)
        if permissions is not None:
            changes["permissions"] = _checked_permissions(permissions)
            require_within(principal, changes["permissions"], "This role")
        if description is not _UNSET:
            changes["description"] = description
        WorkspaceRole.update(**changes).where(WorkspaceRole.id == role_id).execute()
    return get_role(workspace_id=workspace_id, role_id=role_id)


def delete_role(*, workspace_id: str, role_id: str) -> None:
    with database.atomic():
        row = _editable(workspace_id, role_id)
        # Members and pending invitations that hold the role: counted under the role's row lock,
        # so that no assignment slips in between the count and the delete (see members.change_role).
        _lock(row.id)
        members = Membership.select().where((Membership.workspace == workspace_id) & (Membership.role == row.id)).count()
        if members:
            raise Conflict(f"The role {row.name} is held by {members} member{'' if members == 1 else 's'}; "
                           "give them another role first.")
        Invitation.delete().where((Invitation.workspace == workspace_id) & (Invitation.role == row.id)
                                  & Invitation.accepted_at.is_null()).execute()
        WorkspaceRole.delete().where(WorkspaceRole.id == row.id).execute()


def _lock(role_id: str) -> None:
    WorkspaceRole.update(updated_at=WorkspaceRole.updated_at).where(WorkspaceRole.id == role_id).execute()


def lock_for_assignment(workspace_id: str, role: str) -> None:
    """Called in the transaction that gives ``role`` to someone: a custom role's row is locked, so a
    concurrent delete either sees the new holder or deletes first (and the assignment fails)."""
    if role not in ROLES:
        if not WorkspaceRole.update(updated_at=WorkspaceRole.updated_at).where(
                (WorkspaceRole.workspace == workspace_id) & (WorkspaceRole.id == role)).execute():
            raise Conflict("The role was deleted meanwhile; choose another.")
