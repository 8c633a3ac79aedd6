"""The statuses of a workspace's feedback, and which of them count as resolved.

A workspace that never configured its statuses has the defaults; configuring them writes its own
rows (models.feedback.tables.FeedbackStatus). A feedback's ``resolved`` follows its status: a
status that counts as resolved makes it resolved, any other reopens it.
"""
from __future__ import annotations

from typing import NamedTuple

from models.feedback.tables import FeedbackStatus
from models.kernel.errors import InvalidInput


class Status(NamedTuple):
    name: str
    resolved: bool


DEFAULTS = (Status("open", False), Status("in_progress", False), Status("resolved", True),
            Status("wont_fix", True))


def of_workspace(workspace_id: str) -> list[Status]:
    """The workspace's statuses in their order: its own, or the defaults."""
    rows = (FeedbackStatus.in_workspace(workspace_id, FeedbackStatus.name, FeedbackStatus.resolved)
            .order_by(FeedbackStatus.position).tuples())
    return [Status(name, bool(resolved)) for name, resolved in rows] or list(DEFAULTS)


def check(workspace_id: str, status: str, *, field: str = "status") -> Status:
    """The workspace's status named ``status``; InvalidInput naming the allowed ones otherwise."""
    known = of_workspace(workspace_id)
    for candidate in known:
        if candidate.name == status:
            return candidate
    raise InvalidInput(f"{field} must be one of this workspace's feedback statuses: "
                       f"{', '.join(s.name for s in known)}; {status!r} is not.")


def first_resolved(workspace_id: str) -> str:
    """The status a feedback takes when it is resolved (the first that counts as resolved)."""
    return next(s.name for s in of_workspace(workspace_id) if s.resolved)


def first_open(workspace_id: str) -> str:
    """The status a feedback takes when it is created or reopened (the first that does not count
    as resolved)."""
    return next(s.name for s in of_workspace(workspace_id) if not s.resolved)
