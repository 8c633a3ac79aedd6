"""A live call's statuses and the moves between them, and a control request's states and theirs:
the one table of each, read by the status operation (models.live_calls.calls), the report that
ends a call, and the acknowledgement of a control request (models.live_calls.controls).

queued       -> ringing, ended                 (ended: never rang, never answered)
ringing      -> in-progress, ended             (ended: not answered)
in-progress  -> forwarding, ended
forwarding   -> in-progress, ended             (back when a transfer fails or comes back)
ended: final.

A control request: pending -> delivered, done, failed; delivered -> done, failed; done and failed
are final. A move to the status (or state) held already changes nothing and is no error: a runtime
that retries a request it is unsure of gets the same answer.
"""
from __future__ import annotations

from models.kernel.errors import Conflict

QUEUED = "queued"
RINGING = "ringing"
IN_PROGRESS = "in-progress"
FORWARDING = "forwarding"
ENDED = "ended"

STATUSES = (QUEUED, RINGING, IN_PROGRESS, FORWARDING, ENDED)

MOVES: dict[str, tuple[str, ...]] = {
    QUEUED: (RINGING, ENDED),
    RINGING: (IN_PROGRESS, ENDED),
    IN_PROGRESS: (FORWARDING, ENDED),
    FORWARDING: (IN_PROGRESS, ENDED),
    ENDED: (),
}

# The statuses of a call that can be controlled: someone is on the line with it.
CONTROLLABLE = frozenset({IN_PROGRESS, FORWARDING})
# The statuses of a call still under way (the live list).
OPEN = tuple(status for status in STATUSES if status != ENDED)


def describe_moves(current: str) -> str:
    moves = MOVES[current]
    if not moves:
        return f"The call is {current}; its status cannot change any more."
    return f"The call is {current}; it can move to {' or '.join(moves)} only."


def check_move(current: str, wanted: str) -> None:
    """Nothing when ``current -> wanted`` is a legal move; else Conflict naming the current status
    and the moves allowed from it ("The call is ringing; it can move to in-progress or ended only.")."""
    if wanted not in MOVES[current]:
        raise Conflict(describe_moves(current), result={"status": current, "allowed": list(MOVES[current])})


PENDING = "pending"
DELIVERED = "delivered"
DONE = "done"
FAILED = "failed"

CONTROL_STATES = (PENDING, DELIVERED, DONE, FAILED)

CONTROL_MOVES: dict[str, tuple[str, ...]] = {
    PENDING: (DELIVERED, DONE, FAILED),
    DELIVERED: (DONE, FAILED),
    DONE: (),
    FAILED: (),
}


def check_control_move(current: str, wanted: str) -> None:
    """Nothing when a control request may move from ``current`` to ``wanted``; else Conflict naming both."""
    if wanted not in CONTROL_MOVES[current]:
        allowed = CONTROL_MOVES[current]
        rest = f"it can move to {' or '.join(allowed)} only." if allowed else "its state cannot change any more."
        raise Conflict(f"The control request is {current}; {rest}", result={"state": current, "allowed": list(allowed)})
