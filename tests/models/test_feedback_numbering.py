"""Feedback numbers under concurrency: 1, 2, 3... per workspace with no gap and no duplicate when 20
threads create at once, a workspace's numbers its own; and the statuses' lock: a status removed
while feedback is being given it is either refused (409) or given to none.

Threads run in one process, each in its own ``session()`` and unit of work, as handler threads
do. Every test runs on SQLite and, with TEST_DATABASE_URL set, on a scratch PostgreSQL database.
"""
from __future__ import annotations

import pytest

from models.feedback import feedbacks, statuses
from models.feedback.tables import Feedback
from models.kernel.db import database, is_postgres, session, unit_of_work
from models.kernel.errors import Conflict, InvalidInput
from tests.support import factories
from tests.support.threads import run_threads


def create(actor, agent_id: str, title: str, status: str | None = None, *, thread: bool = False) -> int:
    """The number of a feedback created as a request creates one; ``thread``: in a thread of its own."""
    try:
        with session(), unit_of_work():
            return feedbacks.create(factories.principal(actor), workspace_id=actor.workspace_id, title=title,
                                    agent_id=agent_id, status=status).number
    finally:
        if thread and not is_postgres():
            database.close()  # this thread's SQLite connection (session() keeps it for the thread's life)


def numbers_of(workspace_id: str) -> list[int]:
    with session():
        return sorted(n for (n,) in Feedback.in_workspace(workspace_id, Feedback.number).tuples())


def test_twenty_concurrent_creations_number_1_to_20(db):
    first, second = factories.workspace(), factories.workspace()
    agents = {first.workspace_id: factories.agent(first), second.workspace_id: factories.agent(second)}

    def make(index: int) -> int:
        actor = first if index < 20 else second
        return create(actor, agents[actor.workspace_id], f"feedback {index}", thread=True)

    handed = run_threads(30, make)
    assert sorted(handed[:20]) == list(range(1, 21))
    assert sorted(handed[20:]) == list(range(1, 11))
    assert numbers_of(first.workspace_id) == list(range(1, 21))
    assert numbers_of(second.workspace_id) == list(range(1, 11))
    assert create(first, agents[first.workspace_id], "the next") == 21


def test_a_failed_creation_gives_its_number_back(db):
    actor = factories.workspace()
    agent_id = factories.agent(actor)
    assert create(actor, agent_id, "one") == 1
    with pytest.raises(InvalidInput, match="closed"):  # after the number was taken, in the same transaction
        create(actor, agent_id, "refused", status="closed")
    assert create(actor, agent_id, "two") == 2


def test_a_status_removed_while_feedback_is_given_it_is_refused_or_given_to_none(db):
    actor = factories.workspace()
    agent_id = factories.agent(actor)
    without = [s._asdict() for s in statuses.DEFAULTS if s.name != "in_progress"]

    def work(index: int) -> str:
        try:
            if index == 0:
                with session(), unit_of_work():
                    statuses.replace(factories.principal(actor), workspace_id=actor.workspace_id, statuses=without)
                return "removed"
            create(actor, agent_id, f"feedback {index}", status="in_progress")
            return "created"
        except Conflict:
            return "refused"
        except InvalidInput as exc:  # a creation after the removal: 400 naming the allowed statuses
            assert "in_progress" in str(exc), exc
            return "invalid"
        finally:
            if not is_postgres():
                database.close()

    outcomes = run_threads(11, work)
    with session():
        held = Feedback.in_workspace(actor.workspace_id, Feedback.id).where(Feedback.status == "in_progress").count()
        configured = [s.name for s in statuses.of_workspace(actor.workspace_id)]
    if outcomes[0] == "removed":
        assert "in_progress" not in configured and held == 0
    else:
        assert outcomes[0] == "refused" and "in_progress" in configured and held >= 1
