"""The statuses of a workspace's feedback, and which of them count as resolved.

A workspace that never configured its statuses has the defaults; configuring them writes its own
rows (models.feedback.tables.FeedbackStatus). A feedback's ``resolved`` follows its status: a
status that counts as resolved makes it resolved, any other reopens it.
"""
from __future__ import annotations

import re
from typing import NamedTuple

from peewee import fn

from models.feedback.tables import Feedback, FeedbackStatus
from models.identity.principal import Principal
from models.kernel.db import database, utcnow
from models.kernel.errors import Conflict, InvalidInput
from models.kernel.sql import Statement


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


# --- The workspace's configuration -----------------------------------------------------------

NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]{0,31}")
MAX_STATUSES = 20

# Taken first by every write that sets a feedback's status and by a change of the configuration:
# the workspace's counter row (models.feedback.tables.FeedbackCounter, whose last number it leaves
# as it is), locked until the transaction commits. So a status cannot be removed while a feedback
# is being given it: one of the two waits for the other, then sees what it did.
_LOCK = Statement(
    "INSERT INTO feedback_counter (workspace_id, last_number) VALUES ({p}, 0) "
    "ON CONFLICT (workspace_id) DO UPDATE SET last_number = feedback_counter.last_number")


def lock(workspace_id: str) -> None:
    """The workspace's statuses held still until the transaction ends (see ``_LOCK``)."""
    _LOCK.execute(workspace_id)


def _parsed(statuses) -> list[Status]:
    if not isinstance(statuses, list) or not 1 <= len(statuses) <= MAX_STATUSES:
        raise InvalidInput(f"statuses must list 1 to {MAX_STATUSES} statuses.")
    parsed, seen = [], set()
    for index, item in enumerate(statuses):
        name, resolved = (item.get("name"), item.get("resolved")) if isinstance(item, dict) else (None, None)
        if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
            raise InvalidInput(f"statuses[{index}].name must be 1 to 32 of a-z, 0-9 and _, starting with a "
                               "letter.")
        if not isinstance(resolved, bool):
            raise InvalidInput(f"statuses[{index}].resolved must be true or false.")
        if name in seen:
            raise InvalidInput(f"statuses[{index}].name {name!r} is listed twice; names are unique.")
        seen.add(name)
        parsed.append(Status(name, resolved))
    if all(s.resolved for s in parsed) or not any(s.resolved for s in parsed):
        raise InvalidInput("statuses must hold at least one that counts as resolved and one that does not.")
    return parsed


def replace(principal: Principal, *, workspace_id: str, statuses) -> list[Status]:
    """The workspace's statuses become ``statuses`` (in that order). A status that some feedback
    holds cannot go (Conflict naming it and how many hold it); a feedback whose status changes
    side (resolved or not) follows it: resolved now by the caller, or reopened."""
    wanted = _parsed(statuses)
    with database.atomic():
        lock(workspace_id)
        names = [s.name for s in wanted]
        held = (Feedback.in_workspace(workspace_id, Feedback.status, fn.COUNT(Feedback.id))
                .where(Feedback.status.not_in(names)).group_by(Feedback.status).order_by(Feedback.status).tuples())
        if held := list(held):
            listed = "; ".join(f"{name!r} is held by {count} feedback" for name, count in held)
            raise Conflict(f"A status some feedback holds cannot be removed: {listed}. Move that feedback to "
                           "another status first.")
        FeedbackStatus.delete().where(FeedbackStatus.workspace == workspace_id).execute()
        FeedbackStatus.insert_many([{"workspace": workspace_id, "name": s.name, "resolved": s.resolved,
                                     "position": position} for position, s in enumerate(wanted)]).execute()
        now = utcnow()
        resolved = [s.name for s in wanted if s.resolved]
        opened = [s.name for s in wanted if not s.resolved]
        in_workspace = Feedback.workspace == workspace_id
        Feedback.update(resolved=True, resolved_at=now, resolved_by=principal.user_id, updated_at=now).where(
            in_workspace & Feedback.status.in_(resolved) & (Feedback.resolved == False)).execute()  # noqa: E712
        Feedback.update(resolved=False, resolved_at=None, resolved_by=None, closed_by_version_id=None,
                        updated_at=now).where(
            in_workspace & Feedback.status.in_(opened) & (Feedback.resolved == True)).execute()  # noqa: E712
    return wanted
