"""Members of a workspace given a piece of its work (a feedback, a review): who may be assigned,
and who is, first assigned first. Each kind keeps its own table of (its id, user_id, assigned_at)
rows; what they share is read here, so that both answer in one shape."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import NamedTuple

from peewee import JOIN, fn

from models.identity.tables import Membership, User
from models.kernel.errors import NotFound


class Assignee(NamedTuple):
    user_id: str
    assigned_at: datetime
    user_name: str | None


def require_member(workspace_id: str, user_id: str) -> None:
    """NotFound naming ``user_id`` unless it is a member of the workspace: work is assigned to members only."""
    if not Membership.select(Membership.id).where((Membership.workspace == workspace_id)
                                                 & (Membership.user == user_id)).exists():
        raise NotFound(f"userId: user {user_id} is not a member of this workspace; work is assigned to members only.")


def assignees_of(table, owner, workspace_id: str, ids: Iterable[str]) -> dict[str, list[Assignee]]:
    """The assignees of each of ``ids`` (values of ``table``'s column ``owner``), first assigned
    first, in one statement."""
    ids = sorted(set(ids))
    found: dict[str, list[Assignee]] = defaultdict(list)
    if not ids:
        return found
    rows = (table.in_workspace(workspace_id, owner, table.user_id, table.assigned_at,
                               fn.COALESCE(User.display_name, User.email))
            .join(User, JOIN.LEFT_OUTER, on=User.id == table.user_id)
            .where(owner.in_(ids)).order_by(table.assigned_at, table.id).tuples())
    for owner_id, user_id, assigned_at, name in rows:
        found[owner_id].append(Assignee(user_id, assigned_at, name))
    return found
