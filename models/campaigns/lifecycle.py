"""A campaign's statuses and the moves between them: the one table of them, read by the status
operation (models.campaigns.campaigns) and by execution (models.campaigns.dialing).

draft      -> scheduled, running, cancelled
scheduled  -> running, paused, cancelled, draft   (back to draft to be edited before it starts)
running    -> paused, cancelled, completed
paused     -> running, cancelled
completed, cancelled: final.

``scheduled`` means the campaign starts by itself at its startsAt (claims treat a scheduled
campaign whose startsAt has come as running); ``running`` means it calls now.
"""
from __future__ import annotations

from models.kernel.errors import Conflict

DRAFT = "draft"
SCHEDULED = "scheduled"
RUNNING = "running"
PAUSED = "paused"
COMPLETED = "completed"
CANCELLED = "cancelled"

STATUSES = (DRAFT, SCHEDULED, RUNNING, PAUSED, COMPLETED, CANCELLED)

MOVES: dict[str, frozenset[str]] = {
    DRAFT: frozenset({SCHEDULED, RUNNING, CANCELLED}),
    SCHEDULED: frozenset({RUNNING, PAUSED, CANCELLED, DRAFT}),
    RUNNING: frozenset({PAUSED, CANCELLED, COMPLETED}),
    PAUSED: frozenset({RUNNING, CANCELLED}),
    COMPLETED: frozenset(),
    CANCELLED: frozenset(),
}

# The statuses a move into which starts calling (so the campaign needs contacts and a published
# version of its agent or workflow).
STARTING = frozenset({SCHEDULED, RUNNING})
# Statuses of a campaign that is over: nothing may be added to it, nothing is dialled.
FINAL = frozenset({COMPLETED, CANCELLED})
# Statuses of a campaign that still calls or will: the agent or workflow it uses cannot be deleted.
ACTIVE = frozenset({DRAFT, SCHEDULED, RUNNING, PAUSED})


# The order in which a message lists the allowed moves: forward first, back to draft last.
_MESSAGE_ORDER = (SCHEDULED, RUNNING, PAUSED, CANCELLED, COMPLETED, DRAFT)


def allowed_moves(current: str) -> list[str]:
    """The statuses ``current`` may move to, forward first."""
    return [status for status in _MESSAGE_ORDER if status in MOVES[current]]


def describe_moves(current: str) -> str:
    moves = allowed_moves(current)
    if not moves:
        return f"The campaign is {current}; it cannot change status any more."
    if len(moves) == 1:
        return f"The campaign is {current}; it can move to {moves[0]} only."
    return f"The campaign is {current}; it can move to {', '.join(moves[:-1])} or {moves[-1]}."


def check_move(current: str, wanted: str) -> None:
    """Nothing when ``current -> wanted`` is a legal move; else Conflict naming the current status
    and the moves allowed from it ("The campaign is running; it can move to paused, cancelled or
    completed.")."""
    if wanted not in MOVES[current]:
        raise Conflict(describe_moves(current))
