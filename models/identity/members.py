"""The members of a workspace: their roles, changes of role, removal, leaving.

The rules, each checked in the transaction that applies it:
- nobody gives a role holding more than they hold, nor changes or removes a member who holds
  more than they do (models.identity.roles.require_within);
- a workspace always keeps an owner: its last owner can neither be demoted, nor removed, nor
  leave. The workspace's row is locked first, so two owners demoting each other at once cannot
  both succeed;
- a removed member's API keys of the workspace are deleted with the membership; their access
  tokens stop acting in it on the next request (models.identity.credentials finds no membership)
  and, as their departure is recorded, never act in it again, even once they are invited back
  (the invitation gives a new token). The tokens reach the user's other workspaces still.
"""
from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from peewee import JOIN, fn

from models.identity.principal import Principal
from models.identity.roles import granted_by, lock_for_assignment, require_within, resolve
from models.identity.tables import ApiKey, MemberDeparture, Membership, User, WorkspaceRole
from models.kernel.db import database, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.pagination import Page, PageQuery
from models.kernel.scoping import Workspace, same_workspace


class MemberRecord(NamedTuple):
    user_id: str
    email: str
    display_name: str | None
    is_active: bool
    role: str
    role_name: str | None  # a custom role's name; None for a built-in role
    joined_at: datetime


_M, _U, _R = Membership, User, WorkspaceRole
_COLUMNS = (_M.user, _U.email, _U.display_name, _U.is_active, _M.role, _R.name, _M.created_at)


def _joined(query):
    return (query.join(_U, on=(_U.id == _M.user))
            .join(_R, JOIN.LEFT_OUTER, on=same_workspace(_R.id == _M.role, _R, _M)))


_PAGE = PageQuery(
    lambda workspace_id, limit, offset: _joined(_M.select(*_COLUMNS)).where(_M.workspace == workspace_id)
    .order_by(_M.created_at, _M.user).limit(limit).offset(offset),
    lambda workspace_id: _M.select(fn.COUNT(_M.id)).where(_M.workspace == workspace_id))


def list_members(*, workspace_id: str, limit: int, offset: int) -> Page[MemberRecord]:
    return _PAGE.page(MemberRecord, workspace_id=workspace_id, limit=limit, offset=offset)


def get_member(*, workspace_id: str, user_id: str) -> MemberRecord:
    row = (_joined(_M.select(*_COLUMNS)).where((_M.workspace == workspace_id) & (_M.user == user_id))
           .tuples().first())
    if row is None:
        raise NotFound(f"User {user_id} is not a member of this workspace.")
    return MemberRecord(*row)


def _lock_workspace(workspace_id: str) -> None:
    Workspace.update(id=Workspace.id).where(Workspace.id == workspace_id).execute()


def _membership(workspace_id: str, user_id: str) -> Membership:
    found = _M.get_or_none((_M.workspace == workspace_id) & (_M.user == user_id))
    if found is None:
        raise NotFound(f"User {user_id} is not a member of this workspace.")
    return found


def _owners(workspace_id: str) -> int:
    return _M.select().where((_M.workspace == workspace_id) & (_M.role == "owner")).count()


def change_role(principal: Principal, *, workspace_id: str, user_id: str, role: str) -> MemberRecord:
    with database.atomic():
        _lock_workspace(workspace_id)
        membership = _membership(workspace_id, user_id)
        stored, grants = resolve(workspace_id, role)
        require_within(principal, granted_by(workspace_id, membership.role), "Changing this member's role")
        require_within(principal, grants, f"The role {role}")
        if membership.role == "owner" and stored != "owner" and _owners(workspace_id) == 1:
            raise Conflict("This member is the workspace's last owner: make another member owner first.")
        lock_for_assignment(workspace_id, stored)
        _M.update(role=stored).where(_M.id == membership.id).execute()
    return get_member(workspace_id=workspace_id, user_id=user_id)


def remove(principal: Principal, *, workspace_id: str, user_id: str, leaving: bool = False) -> int:
    """Removes the membership and the member's API keys of the workspace; returns how many keys."""
    with database.atomic():
        _lock_workspace(workspace_id)
        membership = _membership(workspace_id, user_id)
        if not leaving:
            require_within(principal, granted_by(workspace_id, membership.role), "Removing this member")
        if membership.role == "owner" and _owners(workspace_id) == 1:
            raise Conflict("The workspace's last owner can neither leave nor be removed: make another member "
                           "owner first, or delete the workspace.")
        keys = ApiKey.delete().where((ApiKey.workspace == workspace_id) & (ApiKey.user == user_id)).execute()
        _M.delete().where(_M.id == membership.id).execute()
        now = utcnow()
        MemberDeparture.insert(workspace=workspace_id, user=user_id, departed_at=now).on_conflict(
            conflict_target=[MemberDeparture.workspace, MemberDeparture.user],
            update={MemberDeparture.departed_at: now}).execute()
    return keys


def add(*, workspace_id: str, user_id: str, role: str) -> bool:
    """A membership with ``role`` (already resolved), in the caller's transaction; False when the
    user is a member already (their role is kept)."""
    if _M.select().where((_M.workspace == workspace_id) & (_M.user == user_id)).exists():
        return False
    lock_for_assignment(workspace_id, role)
    _M.create(workspace=workspace_id, user=user_id, role=role,
              tokens_since=returning_since(workspace_id=workspace_id, user_id=user_id))
    return True


def returning_since(*, workspace_id: str, user_id: str):
    """When the user last left the workspace, if they did: a membership made now is a return, and
    their access tokens created before then do not act in it."""
    return (MemberDeparture.in_workspace(workspace_id, MemberDeparture.departed_at)
            .where(MemberDeparture.user == user_id).scalar())


def require_email(email: str) -> str:
    email = email.strip().lower()
    local, at, domain = email.partition("@")
    if not at or not local or "." not in domain or domain.startswith(".") or domain.endswith(".") or " " in email:
        raise InvalidInput("email must be an email address such as ada@example.com.")
    return email
