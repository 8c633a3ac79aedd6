"""Feedback: what a person flags about a call (or one message of it), an agent or a workflow.

A feedback is numbered 1, 2, 3... per workspace (models.feedback.tables.FeedbackCounter). Reads
join what the feedback is about (the call's start and customer number, the agent's or workflow's
name) in the statement that reads the feedback, and the assignees of a whole page in one more:
a fixed number of statements whatever the page's size.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import NamedTuple

from peewee import JOIN, fn

from models.calls.tables import Call
from models.configs.tables import Agent, Workflow
from models.feedback import references, statuses
from models.feedback.tables import Feedback, FeedbackAssignee
from models.identity.principal import Principal
from models.identity.tables import User
from models.kernel.db import database, utcnow
from models.kernel.errors import InvalidInput, NotFound
from models.kernel.scoping import same_workspace
from models.kernel.sql import Statement
from models.kernel.text import text_problem

SEVERITIES = range(1, 6)
ORIGINS = ("user", "review", "simulation")  # a feedback's createdBy


class FeedbackRecord(NamedTuple):
    id: str
    workspace_id: str
    number: int
    title: str
    description: str | None
    severity: int
    status: str
    call_id: str | None
    message_id: str | None
    entity_type: str | None
    agent_id: str | None
    workflow_id: str | None
    solution_id: str | None
    resolved: bool
    resolved_at: datetime | None
    resolved_by: str | None
    resolved_by_name: str | None
    closed_by_version_id: str | None
    is_archived: bool
    comments_count: int
    created_by: str
    author_id: str
    created_at: datetime
    updated_at: datetime
    call_started_at: datetime | None
    customer: str | None  # the call's customer number, whole: the handler masks it
    agent_name: str | None  # the agent's name, else the workflow's


class Assignee(NamedTuple):
    user_id: str
    assigned_at: datetime
    user_name: str | None


_F = Feedback
_AGENT, _WORKFLOW, _RESOLVER = Agent.alias("a"), Workflow.alias("wf"), User.alias("resolver")
COLUMNS = (_F.id, _F.workspace, _F.number, _F.title, _F.description, _F.severity, _F.status, _F.call_id,
           _F.message_id, _F.entity_type, _F.agent_id, _F.workflow_id, _F.solution_id, _F.resolved, _F.resolved_at,
           _F.resolved_by, fn.COALESCE(_RESOLVER.display_name, _RESOLVER.email).alias("resolved_by_name"),
           _F.closed_by_version_id, _F.is_archived, _F.comments_count, _F.created_by, _F.author_id, _F.created_at,
           _F.updated_at, Call.started_at, Call.customer,
           fn.COALESCE(_AGENT.name, _WORKFLOW.name).alias("agent_name"))


def joined(workspace_id, *columns):
    """The workspace's feedback with what each is about joined: the base of every read."""
    return (_F.in_workspace(workspace_id, *(columns or COLUMNS))
            .join(Call, JOIN.LEFT_OUTER, on=same_workspace(Call.id == _F.call_id, Call, _F))
            .switch(_F).join(_AGENT, JOIN.LEFT_OUTER, on=same_workspace(_AGENT.id == _F.agent_id, _AGENT, _F))
            .switch(_F).join(_WORKFLOW, JOIN.LEFT_OUTER,
                             on=same_workspace(_WORKFLOW.id == _F.workflow_id, _WORKFLOW, _F))
            .switch(_F).join(_RESOLVER, JOIN.LEFT_OUTER, on=_RESOLVER.id == _F.resolved_by))


def by_ids(workspace_id: str, ids: Iterable[str]) -> dict[str, FeedbackRecord]:
    """The workspace's feedback among ``ids``, by id, in one statement (unknown ids are left out)."""
    ids = sorted(set(ids))
    if not ids:
        return {}
    rows = joined(workspace_id).where(_F.id.in_(ids)).order_by(_F.number).tuples()
    return {row[0]: FeedbackRecord._make(row) for row in rows}


def assignees_of(workspace_id: str, ids: Iterable[str]) -> dict[str, list[Assignee]]:
    """The assignees of each of ``ids``, first assigned first, in one statement."""
    ids = sorted(set(ids))
    found: dict[str, list[Assignee]] = defaultdict(list)
    if not ids:
        return found
    A = FeedbackAssignee
    rows = (A.in_workspace(workspace_id, A.feedback, A.user_id, A.assigned_at,
                           fn.COALESCE(User.display_name, User.email))
            .join(User, JOIN.LEFT_OUTER, on=User.id == A.user_id)
            .where(A.feedback.in_(ids)).order_by(A.assigned_at, A.id).tuples())
    for feedback_id, user_id, assigned_at, name in rows:
        found[feedback_id].append(Assignee(user_id, assigned_at, name))
    return found


TITLE_MAX_CHARS = 200
DESCRIPTION_MAX_CHARS = 10_000

# The next number of a workspace, in the transaction that inserts the feedback: the counter's row
# is locked until it commits, so concurrent creations take 1, 2, 3... (an aborted one gives its
# number back); SQLite has one writer at a time anyway.
_NEXT_NUMBER = Statement(
    "INSERT INTO feedback_counter (workspace_id, last_number) VALUES ({p}, 1) "
    "ON CONFLICT (workspace_id) DO UPDATE SET last_number = feedback_counter.last_number + 1 "
    "RETURNING last_number")


def text_field(value, field: str, max_chars: int, *, required: bool, multiline: bool = False) -> str | None:
    """``value`` trimmed and checked (no control characters but, ``multiline``, line breaks and
    tabs; 1 to ``max_chars`` characters)."""
    if value is None:
        if required:
            raise InvalidInput(f"{field} is required.")
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be text.")
    if problem := text_problem(value, multiline=multiline):
        raise InvalidInput(f"{field} {problem}.")
    value = value.strip()
    if not 1 <= len(value) <= max_chars:
        raise InvalidInput(f"{field} must be 1 to {max_chars} characters once trimmed; {len(value)} given.")
    return value


def severity_value(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value not in SEVERITIES:
        raise InvalidInput("severity must be an integer from 1 (lowest) to 5 (highest).")
    return value


def create(principal: Principal, *, workspace_id: str, title: str, description: str | None = None,
           severity: int = 3, status: str | None = None, call_id: str | None = None,
           message_id: str | None = None, agent_id: str | None = None, workflow_id: str | None = None,
           created_by: str = "user") -> FeedbackRecord:
    """A feedback on a call (and one message of it), an agent or a workflow of the workspace: a
    call's feedback takes the call's agent unless ``agent_id`` says which, and gets a ``source``
    reference to the call. NotFound naming what the workspace lacks."""
    assert created_by in ORIGINS
    title = text_field(title, "title", TITLE_MAX_CHARS, required=True)
    description = text_field(description, "description", DESCRIPTION_MAX_CHARS, required=False, multiline=True)
    severity = severity_value(severity)
    if call_id is None and agent_id is None and workflow_id is None:
        raise InvalidInput("A feedback is about a call, an agent or a workflow: give callId, agentId or workflowId.")
    if message_id is not None and call_id is None:
        raise InvalidInput("messageId names a message of a call: give callId too.")
    with database.atomic():
        if call_id is not None:
            call_agent = Call.in_workspace(workspace_id, Call.agent_id).where(Call.id == call_id).tuples().first()
            if call_agent is None:
                raise NotFound(f"No call {call_id} in this workspace.")
            if agent_id is None and workflow_id is None and call_agent[0] is not None:
                # The report names the agent; one of another workspace (or none known) is not ours.
                if Agent.in_workspace(workspace_id, Agent.id).where(Agent.id == call_agent[0]).exists():
                    agent_id = call_agent[0]
        if agent_id is not None and not Agent.in_workspace(workspace_id, Agent.id).where(Agent.id == agent_id).exists():
            raise NotFound(f"No agent {agent_id} in this workspace.")
        if workflow_id is not None and not Workflow.in_workspace(workspace_id, Workflow.id).where(
                Workflow.id == workflow_id).exists():
            raise NotFound(f"No workflow {workflow_id} in this workspace.")
        entity_type = "agent" if agent_id else ("workflow" if workflow_id else None)
        state = statuses.check(workspace_id, status) if status is not None else statuses.Status(
            statuses.first_open(workspace_id), False)
        number = _NEXT_NUMBER.one(workspace_id)[0]
        now = utcnow()
        row = Feedback.create(
            workspace=workspace_id, number=number, title=title, description=description, severity=severity,
            status=state.name, call_id=call_id, message_id=message_id, entity_type=entity_type, agent_id=agent_id,
            workflow_id=workflow_id, resolved=state.resolved, resolved_at=now if state.resolved else None,
            resolved_by=principal.user_id if state.resolved else None, created_by=created_by,
            author_id=principal.user_id, created_at=now, updated_at=now)
        if call_id is not None:
            references.add(workspace_id=workspace_id, feedback_id=row.id, entity_type="call", entity_id=call_id,
                           relation="source", created_by=principal.user_id)
    return get(workspace_id=workspace_id, feedback_id=row.id)


def get(*, workspace_id: str, feedback_id: str) -> FeedbackRecord:
    found = by_ids(workspace_id, [feedback_id])
    if not found:
        raise NotFound(f"No feedback {feedback_id} in this workspace.")
    return found[feedback_id]
