"""Feedback: feedback on calls, agents and workflows, made through the domain as the API makes it."""
from __future__ import annotations

from models.kernel.db import session
from tests.support.factories.identity import Actor, principal


def feedback(actor: Actor, title: str = "The agent did not confirm the booking", *, call_id: str | None = None,
             agent_id: str | None = None, workflow_id: str | None = None, severity: int = 3,
             description: str | None = None, status: str | None = None, message_id: str | None = None,
             created_by: str = "user") -> str:
    """A feedback of the actor's workspace on a call, an agent or a workflow; its id."""
    from models.feedback import feedbacks
    with session():
        return feedbacks.create(principal(actor), workspace_id=actor.workspace_id, title=title,
                                description=description, severity=severity, status=status, call_id=call_id,
                                message_id=message_id, agent_id=agent_id, workflow_id=workflow_id,
                                created_by=created_by).id


def assignee(actor: Actor, feedback_id: str, user_id: str) -> None:
    """``user_id`` (a member of the actor's workspace) assigned to the feedback."""
    from models.feedback import assignees
    with session():
        assignees.add(principal(actor), workspace_id=actor.workspace_id, feedback_id=feedback_id, user_id=user_id)


def comment(actor: Actor, feedback_id: str, body: str = "Reproduced on the staging agent.") -> str:
    """A comment of the actor on the feedback; its id."""
    from models.feedback import comments
    with session():
        return comments.add(principal(actor), workspace_id=actor.workspace_id, feedback_id=feedback_id, body=body).id
