"""Optimization runs: an agent's feedback handed to an optimizer, which proposes solutions that a
reviewer accepts or rejects.

A run starts ``generating`` on a set of the agent's feedback (by default its open feedback),
against the agent's head version. The built-in optimizer asks a chat-completions endpoint in the
background (models.optimization.generation); an external one posts its solutions and finishes the
run itself, before its deadline. Then the run is ``pendingReview`` (or ``failed``, with its
``error``), and ``completed`` once every solution is decided (models.optimization.solutions).

Moves: generating → pendingReview | failed; pendingReview → completed. Anything else is a
Conflict naming both states. Each create, move and delete moves the workspace's tally of runs by
status (``tally``) in its own transaction: the unfiltered list reads its summary and total there.
"""
from __future__ import annotations

import base64
import binascii
import functools
import json
from datetime import datetime, timedelta, timezone
from typing import NamedTuple

from peewee import EXCLUDED, fn

from models.configs.tables import Agent
from models.feedback.tables import Feedback
from models.identity.principal import Principal
from models.integrations import llm
from models.kernel.db import database, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.sql import Prepared, like, like_pattern
from models.kernel.text import text_problem
from models.optimization.tables import OptimizationRun, RunFeedback, RunTally, Solution

STATUSES = ("generating", "pendingReview", "completed", "failed")
MOVES = {"generating": ("pendingReview", "failed"), "pendingReview": ("completed",)}
OPTIMIZERS = ("builtin", "external")
MAX_FEEDBACK = 100
INSTRUCTIONS_MAX_CHARS = 2000
NO_ENDPOINT = ("No language model endpoint is configured (LLM_BASE_URL) and the workspace has no llm integration: "
               "the built-in optimizer cannot run. Set LLM_BASE_URL (and LLM_API_KEY, LLM_MODEL), add an llm "
               "integration to the workspace, or start the run with optimizer external.")
# Each sort's columns, the last ones breaking ties so that an index holds the whole order.
SORTS = {"createdAt": (OptimizationRun.created_at, OptimizationRun.id),
         "status": (OptimizationRun.status, OptimizationRun.created_at, OptimizationRun.id),
         "feedbackCount": (OptimizationRun.feedback_count, OptimizationRun.id),
         "solutionCount": (OptimizationRun.solution_count, OptimizationRun.id)}
FILTER_KEYS = ("status", "agentIds", "createdFrom", "createdTo")
SEARCH_MAX_CHARS = 200


class RunRecord(NamedTuple):
    id: str
    workspace_id: str
    agent_id: str
    status: str
    optimizer: str
    instructions: str | None
    base_version_id: str | None
    feedback_count: int
    solution_count: int
    accepted_count: int
    rejected_count: int
    error: str | None
    dropped: list | None
    created_by: str
    created_at: datetime
    updated_at: datetime
    completed_at: datetime | None
    agent_name: str | None


_R = OptimizationRun
COLUMNS = (_R.id, _R.workspace, _R.agent_id, _R.status, _R.optimizer, _R.instructions, _R.base_version_id,
           _R.feedback_count, _R.solution_count, _R.accepted_count, _R.rejected_count, _R.error, _R.dropped,
           _R.created_by, _R.created_at, _R.updated_at, _R.completed_at)


def _with_agent(query, workspace_id: str):
    # The agent's name by a scalar subquery: a run outlives its agent (the name is then null).
    name = Agent.in_workspace(workspace_id, Agent.name).where(Agent.id == _R.agent_id)
    return query.select_extend(name.alias("agent_name"))


# --- settings -----------------------------------------------------------------------------------

_external_timeout_s = 3600.0


def configure(*, external_timeout_s: float) -> None:
    """How long an external optimizer's run may stay generating (EXTERNAL_OPTIMIZER_TIMEOUT_S). The
    endpoint the built-in one asks is the workspace's (models.integrations.llm), looked up per run."""
    global _external_timeout_s
    _external_timeout_s = external_timeout_s


# --- the tally ----------------------------------------------------------------------------------

def tally(workspace_id: str, moves: dict[str, int]) -> None:
    """The workspace's count of runs in each status moved by ``moves`` ({status: +n or -n}), in
    one upsert, within the transaction that creates, deletes or moves the runs. Its rows are taken
    in the order of STATUSES: every move goes forward in it (generating, pendingReview, completed;
    generating, failed), so two transactions lock them in one order and never deadlock."""
    rows = [{"workspace": workspace_id, "status": status, "runs": moves[status]}
            for status in STATUSES if moves.get(status)]
    if rows:
        (RunTally.insert_many(rows)
         .on_conflict(conflict_target=[RunTally.workspace, RunTally.status],
                      update={RunTally.runs: RunTally.runs + EXCLUDED.runs})
         .execute())


def moved(workspace_id: str, before: str, after: str) -> None:
    """One run moved from ``before`` to ``after``, in the tally."""
    tally(workspace_id, {before: -1, after: 1})


# --- writes -------------------------------------------------------------------------------------

def _feedback_of(workspace_id: str, agent_id: str, feedback_ids: list[str] | None) -> list[str]:
    F = Feedback
    if feedback_ids is None:
        rows = list(F.in_workspace(workspace_id, F.id).where(
            (F.agent_id == agent_id) & (F.resolved == False) & (F.is_archived == False))  # noqa: E712
            .order_by(F.number).limit(MAX_FEEDBACK + 1).tuples())
        if not rows:
            raise Conflict(f"Agent {agent_id} has no open feedback to optimize from.")
        if len(rows) > MAX_FEEDBACK:
            raise InvalidInput(f"Agent {agent_id} has more than {MAX_FEEDBACK} open feedback: name at most "
                               f"{MAX_FEEDBACK} in feedbackIds.")
        return [row[0] for row in rows]
    ids = list(dict.fromkeys(feedback_ids))
    if len(ids) > MAX_FEEDBACK:
        raise InvalidInput(f"feedbackIds: at most {MAX_FEEDBACK} feedback per run.")
    found = dict(F.in_workspace(workspace_id, F.id, F.agent_id).where(F.id.in_(ids)).tuples())
    for feedback_id in ids:
        if feedback_id not in found:
            raise NotFound(f"No feedback {feedback_id} in this workspace.")
        if found[feedback_id] != agent_id:
            raise InvalidInput(f"feedbackIds: feedback {feedback_id} is not about agent {agent_id}.")
    return ids


def create(principal: Principal, *, workspace_id: str, agent_id: str, feedback_ids: list[str] | None = None,
           optimizer: str = "builtin", instructions: str | None = None) -> RunRecord:
    """A run of ``optimizer`` on the agent's feedback: generating, or failed at once when the
    built-in optimizer has no endpoint to ask."""
    if optimizer not in OPTIMIZERS:
        raise InvalidInput(f"optimizer must be one of {', '.join(OPTIMIZERS)}.")
    if instructions is not None:
        if len(instructions) > INSTRUCTIONS_MAX_CHARS:
            raise InvalidInput(f"instructions: at most {INSTRUCTIONS_MAX_CHARS} characters.")
        problem = text_problem(instructions, multiline=True)
        if problem:
            raise InvalidInput(f"instructions {problem}.")
    head = Agent.in_workspace(workspace_id, Agent.head_version_id).where(Agent.id == agent_id).tuples().first()
    if head is None:
        raise NotFound(f"No agent {agent_id} in this workspace.")
    ids = _feedback_of(workspace_id, agent_id, feedback_ids)
    now = utcnow()
    # The workspace's own llm integration, else the platform's LLM_BASE_URL, as chat sessions and
    # simulations resolve theirs; the worker resolves it again when it asks.
    fails_now = optimizer == "builtin" and llm.endpoint_for(workspace_id) is None
    with database.atomic():
        run = OptimizationRun.create(
            workspace=workspace_id, agent_id=agent_id, status="failed" if fails_now else "generating",
            optimizer=optimizer, instructions=instructions, base_version_id=head[0], feedback_count=len(ids),
            error=NO_ENDPOINT if fails_now else None, created_by=principal.user_id, created_at=now, updated_at=now,
            # An external optimizer's deadline is its lease: the worker fails the run once it passes.
            lease_until=now + timedelta(seconds=_external_timeout_s) if optimizer == "external" else None)
        RunFeedback.insert_many([{"workspace": workspace_id, "run": run.id, "feedback": f} for f in ids]).execute()
        tally(workspace_id, {run.status: 1})
    return get(workspace_id=workspace_id, run_id=run.id)


def get(*, workspace_id: str, run_id: str) -> RunRecord:
    row = _with_agent(_R.in_workspace(workspace_id, *COLUMNS), workspace_id).where(_R.id == run_id).tuples().first()
    if row is None:
        raise NotFound(f"No optimization run {run_id} in this workspace.")
    return RunRecord._make(row)


def feedback_ids(workspace_id: str, run_id: str) -> list[str]:
    return [row[0] for row in RunFeedback.in_workspace(workspace_id, RunFeedback.feedback)
            .where(RunFeedback.run == run_id).order_by(RunFeedback.feedback).tuples()]


def delete(*, workspace_id: str, run_id: str) -> None:
    """The run and its solutions; versions its accepted solutions made stay, and so does the
    feedback (its solutionId then names a solution that is gone)."""
    with database.atomic():
        # The status as deleted: a move that committed while this waited on the row is seen.
        gone = list(_R.delete().where((_R.workspace == workspace_id) & (_R.id == run_id)).returning(_R.status)
                    .tuples().execute())
        if not gone:
            raise NotFound(f"No optimization run {run_id} in this workspace.")
        tally(workspace_id, {gone[0][0]: -1})


def locked(workspace_id: str, run_id: str) -> RunRecord:
    """The run, its row locked until the transaction ends (an UPDATE that changes nothing: on
    SQLite it takes the write lock, on PostgreSQL the row's)."""
    if not _R.update(updated_at=_R.updated_at).where((_R.workspace == workspace_id) & (_R.id == run_id)).execute():
        raise NotFound(f"No optimization run {run_id} in this workspace.")
    return get(workspace_id=workspace_id, run_id=run_id)


def require_move(run: RunRecord, to: str) -> None:
    if to not in MOVES.get(run.status, ()):
        raise Conflict(f"Optimization run {run.id} cannot move from {run.status} to {to}.")


def finish_external(*, workspace_id: str, run_id: str, error: str | None = None) -> RunRecord:
    """An external optimizer's run ended by it: pendingReview with its solutions, or failed with
    ``error``."""
    if error is not None:
        problem = text_problem(error, multiline=True)
        if problem or not error.strip() or len(error) > 2000:
            raise InvalidInput(f"error {problem or 'must hold 1 to 2000 characters'}.")
    with database.atomic():
        run = locked(workspace_id, run_id)
        if run.optimizer != "external":
            raise Conflict(f"Optimization run {run_id} is the built-in optimizer's: only an external run is "
                           "finished by its optimizer.")
        to = "failed" if error is not None else "pendingReview"
        require_move(run, to)
        if to == "pendingReview" and run.solution_count == 0:
            raise Conflict(f"Optimization run {run_id} has no solution yet: post solutions first, or finish it "
                           "with an error.")
        _R.update(status=to, error=error.strip() if error else None, lease_until=None, updated_at=utcnow()).where(
            _R.id == run_id).execute()
        moved(workspace_id, run.status, to)
    return get(workspace_id=workspace_id, run_id=run_id)


# --- the list -----------------------------------------------------------------------------------

class Filters(NamedTuple):
    statuses: tuple[str, ...] = ()
    agent_ids: tuple[str, ...] = ()
    created_from: datetime | None = None
    created_to: datetime | None = None


def parse_filters(encoded: str | None) -> Filters:
    """The filter state of the list: base64 (standard or URL-safe, padding optional) of a JSON
    object ``{status: [...], agentIds: [...], createdFrom, createdTo}``, every key optional;
    InvalidInput saying what is wrong."""
    if encoded is None:
        return Filters()
    # A "+" left unescaped in a query string arrives as a space, which base64 never holds.
    text = encoded.strip().replace(" ", "+").replace("-", "+").replace("_", "/")
    try:
        raw = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInput("filters must be base64 of a JSON object: it is not valid base64.") from None
    try:
        state = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise InvalidInput("filters must be base64 of a JSON object: the decoded text is not valid JSON.") from None
    if not isinstance(state, dict):
        raise InvalidInput("filters must be base64 of a JSON object: the decoded JSON is not an object.")
    unknown = sorted(set(state) - set(FILTER_KEYS))
    if unknown:
        raise InvalidInput(f"filters: unknown key {unknown[0]} (known: {', '.join(FILTER_KEYS)}).")
    statuses = _string_list(state, "status", 4)
    for status in statuses:
        if status not in STATUSES:
            raise InvalidInput(f"filters.status: {status[:40]} is not one of {', '.join(STATUSES)}.")
    return Filters(tuple(statuses), tuple(_string_list(state, "agentIds", 100)),
                   _moment(state, "createdFrom"), _moment(state, "createdTo"))


def _string_list(state: dict, key: str, most: int) -> list[str]:
    value = state.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise InvalidInput(f"filters.{key} must be an array of non-empty strings.")
    if len(value) > most:
        raise InvalidInput(f"filters.{key}: at most {most} values.")
    return value


def _moment(state: dict, key: str) -> datetime | None:
    value = state.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"filters.{key} must be an ISO 8601 date-time string.")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    except ValueError:
        raise InvalidInput(f"filters.{key} must be an ISO 8601 date-time, such as 2030-01-31T12:00:00Z.") from None
    if parsed.tzinfo is None:
        raise InvalidInput(f"filters.{key} must carry a time zone offset, such as Z or +02:00.")
    return parsed.astimezone(timezone.utc).replace(tzinfo=None)


def _order(sort_by: str, sort_order: str) -> list:
    return [c.desc() if sort_order == "desc" else c.asc() for c in SORTS[sort_by]]


# The unfiltered list is the one every visit opens: its two statements are compiled once (and
# prepared by PostgreSQL), not built per request (models.kernel.sql).
@functools.cache
def _unfiltered_page(sort_by: str, sort_order: str) -> Prepared:
    order = _order(sort_by, sort_order)
    return Prepared(lambda workspace_id, limit, offset: _with_agent(_R.in_workspace(workspace_id, *COLUMNS),
                                                                    workspace_id)
                    .order_by(*order).limit(limit).offset(offset))


class _Tallied(NamedTuple):
    status: str
    runs: int


_TALLIED = Prepared(lambda workspace_id: RunTally.in_workspace(workspace_id, RunTally.status, RunTally.runs))


class RunsPage(NamedTuple):
    items: list[RunRecord]
    total: int
    limit: int
    offset: int
    summary: dict

    def pagination(self) -> dict:
        return {"total": self.total, "limit": self.limit, "offset": self.offset}


def _narrowed(query, workspace_id: str, filters: Filters, search: str | None):
    if filters.statuses:
        query = query.where(_R.status.in_(list(filters.statuses)))
    if filters.agent_ids:
        query = query.where(_R.agent_id.in_(list(filters.agent_ids)))
    if filters.created_from is not None:
        query = query.where(_R.created_at >= filters.created_from)
    if filters.created_to is not None:
        query = query.where(_R.created_at < filters.created_to)
    if search:
        pattern = like_pattern(search)
        agents = Agent.in_workspace(workspace_id, Agent.id).where(like(Agent.name, pattern))
        titled = Solution.in_workspace(workspace_id, Solution.run).where(like(Solution.title, pattern))
        query = query.where(_R.agent_id.in_(agents) | _R.id.in_(titled))
    return query


def list_runs(*, workspace_id: str, limit: int, offset: int, sort_by: str = "createdAt", sort_order: str = "desc",
              search: str | None = None, filters: Filters = Filters()) -> RunsPage:
    """A page of the workspace's runs and the summary of the whole filtered set: two statements
    (the page; the count of each status, whose sum is the total). Unfiltered, the counts are the
    tally's few rows; filtered or searched, a count of the set. A sort on status orders the stored
    names alphabetically (completed, failed, generating, pendingReview), so that the
    (workspace, status, created_at, id) index can serve it."""
    if sort_by not in SORTS:
        raise InvalidInput(f"sortBy must be one of {', '.join(SORTS)}.")
    if sort_order not in ("asc", "desc"):
        raise InvalidInput("sortOrder must be asc or desc.")
    if search is not None:
        search = search.strip()
        problem = text_problem(search)
        if problem or len(search) > SEARCH_MAX_CHARS:
            raise InvalidInput(f"search {problem or f'must hold at most {SEARCH_MAX_CHARS} characters'}.")
    if filters == Filters() and not search:
        items = _unfiltered_page(sort_by, sort_order).records(RunRecord, workspace_id=workspace_id, limit=limit,
                                                              offset=offset)
        counts = dict(_TALLIED.records(_Tallied, workspace_id=workspace_id))
    else:
        page = _narrowed(_with_agent(_R.in_workspace(workspace_id, *COLUMNS), workspace_id), workspace_id, filters,
                         search)
        items = [RunRecord._make(row) for row in page.order_by(*_order(sort_by, sort_order)).limit(limit)
                 .offset(offset).tuples()]
        counts = dict(_narrowed(_R.in_workspace(workspace_id, _R.status, fn.COUNT(_R.id)), workspace_id, filters,
                                search).group_by(_R.status).tuples())
    summary = {status: counts.get(status, 0) for status in STATUSES}
    summary["total"] = sum(counts.values())
    return RunsPage(items, summary["total"], limit, offset, summary)



# --- what uses an agent -------------------------------------------------------------------------

def users_of(kind: str, workspace_id: str, entity_id: str) -> list[str]:
    """The runs still at work on the agent: generating (its solutions are written against its
    head) or pendingReview (accepting one makes its next version). A completed or failed run is
    history and keeps nothing; a workflow has no runs (models.entity_users)."""
    if kind != Agent.KIND:
        return []
    rows = (_R.in_workspace(workspace_id, _R.id, _R.status)
            .where((_R.agent_id == entity_id) & _R.status.in_(["generating", "pendingReview"]))
            .order_by(_R.created_at, _R.id).limit(11).tuples())
    return [f"the optimization run {run_id} ({status})" for run_id, status in rows]
