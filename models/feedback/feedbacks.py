"""Feedback: what a person flags about a call (or one message of it), an agent or a workflow.

A feedback is numbered 1, 2, 3... per workspace (models.feedback.tables.FeedbackCounter). Reads
join what the feedback is about (the call's start and customer number, the agent's or workflow's
name) in the statement that reads the feedback, and the assignees of a whole page in one more:
a fixed number of statements whatever the page's size.
"""
from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from peewee import JOIN, SQL, fn

from models.calls.tables import Call
from models.configs.tables import Agent, Workflow
from models.feedback import references, statuses
from models.feedback.tables import Feedback, FeedbackAssignee
from models.identity import assignees
from models.identity.assignees import Assignee
from models.identity.principal import Principal
from models.identity.tables import User
from models.kernel.db import database, is_postgres, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.pagination import Page, PageQuery
from models.kernel.scoping import same_workspace
from models.kernel.sql import Statement, like, like_pattern, with_parameters
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
    """The assignees of each of the feedback ``ids``, first assigned first, in one statement."""
    return assignees.assignees_of(FeedbackAssignee, FeedbackAssignee.feedback, workspace_id, ids)


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
        # The number first: it locks the workspace's counter row, which a change of the statuses
        # takes too (statuses.lock), so the status checked next cannot be removed before commit.
        number = _NEXT_NUMBER.one(workspace_id)[0]
        state = statuses.check(workspace_id, status) if status is not None else statuses.Status(
            statuses.first_open(workspace_id), False)
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


# --- The list ---------------------------------------------------------------------------------

SORTS = ("createdAt", "updatedAt", "severity", "number", "status")
# Each sort ends with a unique column, so that pages neither repeat nor skip a feedback. Created
# at follows the index (workspace, created_at, id); number is unique in the workspace.
_ORDERS = {"createdAt": (_F.created_at, _F.id), "updatedAt": (_F.updated_at, _F.id),
           "severity": (_F.severity, _F.number), "number": (_F.number,), "status": (_F.status, _F.number)}
SEARCH_MAX_CHARS = 200
MAX_STATUS_FILTER = 20


@dataclass(frozen=True)
class FeedbackFilter:
    """What a list keeps: each set field narrows it. ``archived`` False (the default) hides the
    archived feedback, True shows only them."""
    statuses: tuple[str, ...] = ()
    agent_id: str | None = None
    workflow_id: str | None = None
    call_id: str | None = None
    severities: tuple[int, ...] = ()
    min_severity: int | None = None
    assignee_id: str | None = None
    resolved: bool | None = None
    archived: bool = False
    since: datetime | None = None
    until: datetime | None = None
    q: str | None = None
    sort: str = "createdAt"
    descending: bool = True


# The conditions bound to a parameter (text, ids and moments); the severities, resolved and
# archived are few values each and are part of the statement's shape instead (a parameter stands
# only where text or a moment is compared: models.kernel.sql.Prepared).
_BOUND = ("agent_id", "workflow_id", "call_id", "assignee_id", "since", "until", "search")


def _conditions(params: dict, names: tuple[str, ...], shape: tuple) -> list:
    status_count, severities, min_severity, resolved, archived = shape
    workspace_id = params["workspace_id"]
    found = [_F.is_archived == archived]
    if status_count:
        found.append(_F.status.in_([params[f"status_{i}"] for i in range(status_count)]))
    if severities:
        found.append(_F.severity.in_(list(severities)))
    if min_severity is not None:
        found.append(_F.severity >= min_severity)
    if resolved is not None:
        found.append(_F.resolved == resolved)
    for name in names:
        value = params[name]
        if name == "assignee_id":
            A = FeedbackAssignee
            found.append(fn.EXISTS(A.in_workspace(workspace_id, SQL("1")).where(
                (A.feedback == _F.id) & (A.user_id == value))))
        elif name == "search":
            found.append(like(_F.title, value) | like(_F.description, value))
        elif name == "since":
            found.append(_F.created_at >= value)
        elif name == "until":
            found.append(_F.created_at < value)
        else:
            found.append(getattr(_F, name) == value)
    return found


@functools.lru_cache(maxsize=512)
def _page_query(names: tuple[str, ...], shape: tuple, sort: str, descending: bool) -> PageQuery:
    """The list's two statements (the page with its total, the total alone past the end) for one
    set of filters and one order, compiled once."""
    order = [column.desc() if descending else column.asc() for column in _ORDERS[sort]]
    parameters = (*names, *(f"status_{i}" for i in range(shape[0])))

    def rows(**params):
        return (joined(params["workspace_id"]).where(*_conditions(params, names, shape))
                .order_by(*order).limit(params["limit"]).offset(params["offset"]))

    def total(**params):
        return _F.in_workspace(params["workspace_id"], fn.COUNT(_F.id)).where(*_conditions(params, names, shape))

    return PageQuery(with_parameters(rows, ("workspace_id", "limit", "offset", *parameters)),
                     with_parameters(total, ("workspace_id", *parameters)))


def list_feedbacks(*, workspace_id: str, filters: FeedbackFilter, limit: int, offset: int) -> Page[FeedbackRecord]:
    """A page of the workspace's feedback that ``filters`` keeps, in its order: one statement (two
    past the end), and one more to check the statuses a filter names. The page's assignees are
    ``assignees_of``'s."""
    if filters.sort not in SORTS:
        raise InvalidInput(f"sortBy must be one of {', '.join(SORTS)}.")
    if filters.since and filters.until and filters.until <= filters.since:
        raise InvalidInput("until must be later than since.")
    if filters.severities and filters.min_severity is not None:
        raise InvalidInput("Filter by severity or by minSeverity, not both.")
    for severity in (*filters.severities, *([filters.min_severity] if filters.min_severity is not None else [])):
        severity_value(severity)
    chosen = tuple(sorted(set(filters.statuses)))
    if len(chosen) > MAX_STATUS_FILTER:
        raise InvalidInput(f"status may list at most {MAX_STATUS_FILTER} statuses.")
    if chosen:
        known = [s.name for s in statuses.of_workspace(workspace_id)]
        if unknown := [name for name in chosen if name not in known]:
            raise InvalidInput(f"status must list this workspace's feedback statuses: {', '.join(known)}; "
                               f"{', '.join(map(repr, unknown))} {'is' if len(unknown) == 1 else 'are'} not.")
    search = None if filters.q is None else like_pattern(text_field(filters.q, "q", SEARCH_MAX_CHARS, required=True))
    values = {"agent_id": filters.agent_id, "workflow_id": filters.workflow_id, "call_id": filters.call_id,
              "assignee_id": filters.assignee_id, "since": filters.since, "until": filters.until,
              "search": search}
    values = {name: value for name, value in values.items() if value is not None}
    values.update({f"status_{i}": name for i, name in enumerate(chosen)})
    shape = (len(chosen), tuple(sorted(set(filters.severities))), filters.min_severity, filters.resolved,
             filters.archived)
    names = tuple(name for name in _BOUND if name in values)
    return _page_query(names, shape, filters.sort, filters.descending).page(
        FeedbackRecord, workspace_id=workspace_id, limit=limit, offset=offset, **values)


# --- Changes ----------------------------------------------------------------------------------

_UNSET: Any = object()


def _locked(workspace_id: str, feedback_id: str):
    """(number, status, resolved, call_id) of the feedback, its row locked until the transaction
    ends on PostgreSQL (SQLite's transactions are one at a time); NotFound otherwise."""
    query = _F.in_workspace(workspace_id, _F.number, _F.status, _F.resolved, _F.call_id).where(_F.id == feedback_id)
    row = (query.for_update() if is_postgres() else query).tuples().first()
    if row is None:
        raise NotFound(f"No feedback {feedback_id} in this workspace.")
    return row


def _status_changes(principal: Principal, state: statuses.Status, was_resolved: bool, now: datetime) -> dict:
    """The columns a move to ``state`` sets: resolving records who and when (kept when it moves
    between resolved statuses), reopening clears them."""
    changes = {"status": state.name, "resolved": state.resolved}
    if state.resolved and not was_resolved:
        changes.update(resolved_at=now, resolved_by=principal.user_id)
    elif not state.resolved:
        changes.update(resolved_at=None, resolved_by=None, closed_by_version_id=None)
    return changes


def update(principal: Principal, *, workspace_id: str, feedback_id: str, title=_UNSET, description=_UNSET,
           severity=_UNSET, status=_UNSET, message_id=_UNSET) -> FeedbackRecord:
    """The fields given changed (a description or messageId of None clears it); a status moves the
    feedback's ``resolved`` with it (see ``_status_changes``)."""
    now = utcnow()
    changes: dict = {"updated_at": now}
    if title is not _UNSET:
        changes["title"] = text_field(title, "title", TITLE_MAX_CHARS, required=True)
    if description is not _UNSET:
        changes["description"] = text_field(description, "description", DESCRIPTION_MAX_CHARS, required=False,
                                            multiline=True)
    if severity is not _UNSET:
        changes["severity"] = severity_value(severity)
    with database.atomic():
        if status is not _UNSET:
            statuses.lock(workspace_id)
        _, _, was_resolved, call_id = _locked(workspace_id, feedback_id)
        if message_id is not _UNSET:
            if message_id is not None and call_id is None:
                raise InvalidInput("messageId names a message of a call: this feedback is about no call.")
            changes["message_id"] = message_id
        if status is not _UNSET:
            if not isinstance(status, str):
                raise InvalidInput("status must be text.")
            changes.update(_status_changes(principal, statuses.check(workspace_id, status), bool(was_resolved), now))
        _F.update(**changes).where((_F.workspace == workspace_id) & (_F.id == feedback_id)).execute()
    return get(workspace_id=workspace_id, feedback_id=feedback_id)


def resolve(principal: Principal, *, workspace_id: str, feedback_id: str, status: str | None = None) -> FeedbackRecord:
    """The feedback moved to ``status`` (one that counts as resolved; by default the first such).
    Conflict when it is resolved already: reopen it first, or PATCH its status."""
    return _move(principal, workspace_id, feedback_id, status, resolving=True)


def reopen(principal: Principal, *, workspace_id: str, feedback_id: str, status: str | None = None) -> FeedbackRecord:
    """The feedback moved to ``status`` (one that does not count as resolved; by default the first
    such). Conflict when it is not resolved."""
    return _move(principal, workspace_id, feedback_id, status, resolving=False)


def _move(principal: Principal, workspace_id: str, feedback_id: str, status: str | None, *,
          resolving: bool) -> FeedbackRecord:
    now = utcnow()
    with database.atomic():
        statuses.lock(workspace_id)
        number, current, was_resolved, _ = _locked(workspace_id, feedback_id)
        if status is None:
            state = statuses.Status(statuses.first_resolved(workspace_id) if resolving
                                    else statuses.first_open(workspace_id), resolving)
        else:
            state = statuses.check(workspace_id, status)
            if state.resolved != resolving:
                kind = [s.name for s in statuses.of_workspace(workspace_id) if s.resolved == resolving]
                raise InvalidInput(f"status must be one that {'counts' if resolving else 'does not count'} as "
                                   f"resolved: {', '.join(kind)}; {status!r} is not.")
        if bool(was_resolved) == resolving:
            raise Conflict(f"Feedback #{number} is {'resolved already' if resolving else 'not resolved'} "
                           f"(status {current!r}): " + ("reopen it first." if resolving else "there is nothing to "
                                                        "reopen."))
        changes = {**_status_changes(principal, state, bool(was_resolved), now), "updated_at": now}
        _F.update(**changes).where((_F.workspace == workspace_id) & (_F.id == feedback_id)).execute()
    return get(workspace_id=workspace_id, feedback_id=feedback_id)


def set_archived(*, workspace_id: str, feedback_id: str, archived: bool) -> FeedbackRecord:
    """The feedback archived (hidden from the list unless asked for) or back; doing it twice is
    doing it once."""
    with database.atomic():
        _F.update(is_archived=archived, updated_at=utcnow()).where(
            (_F.workspace == workspace_id) & (_F.id == feedback_id) & (_F.is_archived != archived)).execute()
    return get(workspace_id=workspace_id, feedback_id=feedback_id)


def delete(*, workspace_id: str, feedback_id: str) -> None:
    """The feedback gone, with its assignees, comments and references (the database cascades)."""
    with database.atomic():
        if not _F.delete().where((_F.workspace == workspace_id) & (_F.id == feedback_id)).execute():
            raise NotFound(f"No feedback {feedback_id} in this workspace.")


def touch(workspace_id: str, feedback_id: str, **counters) -> bool:
    """The feedback's updatedAt now (and ``counters`` such as ``comments_count=+1`` added to), in
    the caller's transaction, its row locked until it ends; False when there is no such feedback."""
    changes = {"updated_at": utcnow(), **{name: getattr(_F, name) + delta for name, delta in counters.items()}}
    return bool(_F.update(**changes).where((_F.workspace == workspace_id) & (_F.id == feedback_id)).execute())
