"""A simulation's iterations: their list, one with its transcript and verdicts, and the verdicts
external evaluators post back on one.

An external evaluator (a script of the user's, another testing tool) reads a finished iteration's
transcript and posts its verdicts, each a named check, optionally on one of the simulation's
assertions (then it counts in ``regressions`` beside the engine's). Posting a check of the same
name by the same evaluator again replaces it. An iteration passed when every verdict on it passed,
the engine's and the evaluators' alike, so a verdict posted later can turn it.
"""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import NamedTuple

from peewee import IntegrityError, fn

from models.kernel.db import database, is_postgres, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.pagination import Page, PageQuery
from models.kernel.sql import Prepared
from models.simulations import simulations
from models.simulations.tables import Iteration, Simulation, Verdict

MAX_VERDICTS_PER_POST = 100
MAX_VERDICTS_PER_ITERATION = 500


class IterationRecord(NamedTuple):
    id: str
    simulation_id: str
    number: int
    persona_index: int | None
    scenario_index: int | None
    status: str
    passed: bool | None
    ended_by: str | None
    duration_ms: int | None
    word_error_rate: float | None
    prompt_tokens: int
    completion_tokens: int
    cost: float
    error: str | None
    attempts: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class VerdictRecord(NamedTuple):
    id: str
    iteration_id: str
    assertion_id: str | None
    name: str
    kind: str
    evaluator: str
    passed: bool
    reason: str
    created_at: datetime


class IterationDetail(NamedTuple):
    iteration: IterationRecord
    transcript: list | None
    structured: dict | None
    verdicts: list[VerdictRecord]


_I, _V = Iteration, Verdict
COLUMNS = (_I.id, _I.simulation, _I.number, _I.persona_index, _I.scenario_index, _I.status, _I.passed, _I.ended_by,
           _I.duration_ms, _I.word_error_rate, _I.prompt_tokens, _I.completion_tokens, _I.cost, _I.error,
           _I.attempts, _I.created_at, _I.started_at, _I.finished_at)
_VERDICT_COLUMNS = (_V.id, _V.iteration, _V.assertion_id, _V.name, _V.kind, _V.evaluator, _V.passed, _V.reason,
                    _V.created_at)
_PAGE = PageQuery(
    lambda workspace_id, simulation_id, limit, offset: _I.in_workspace(workspace_id, *COLUMNS)
    .where(_I.simulation == simulation_id).order_by(_I.number).limit(limit).offset(offset),
    lambda workspace_id, simulation_id: _I.in_workspace(workspace_id, fn.COUNT(_I.id)).where(
        _I.simulation == simulation_id))
_Row = NamedTuple("_Row", [(name, object) for name in (*IterationRecord._fields, "transcript", "structured")])
_ONE = Prepared(lambda workspace_id, simulation_id, iteration_id: _I.in_workspace(
    workspace_id, *COLUMNS, _I.transcript, _I.structured).where(
    (_I.simulation == simulation_id) & (_I.id == iteration_id)))


def verdicts_of(workspace_id: str, iteration_ids: list[str]) -> dict[str, list[VerdictRecord]]:
    """The verdicts of each iteration, in one statement."""
    found: dict[str, list[VerdictRecord]] = defaultdict(list)
    if not iteration_ids:
        return found
    rows = (_V.in_workspace(workspace_id, *_VERDICT_COLUMNS).where(_V.iteration.in_(iteration_ids))
            .order_by(_V.created_at, _V.id).tuples())
    for row in rows:
        record = VerdictRecord._make(row)
        found[record.iteration_id].append(record)
    return found


def list_iterations(*, workspace_id: str, simulation_id: str, limit: int, offset: int) -> Page[IterationRecord]:
    """In number order. The simulation's existence is checked only for an empty page."""
    page = _PAGE.page(IterationRecord, workspace_id=workspace_id, simulation_id=simulation_id, limit=limit,
                      offset=offset)
    if not page.items:
        simulations.get(workspace_id=workspace_id, simulation_id=simulation_id)
    return page


def get(*, workspace_id: str, simulation_id: str, iteration_id: str) -> IterationDetail:
    row = _ONE.first(_Row, workspace_id=workspace_id, simulation_id=simulation_id, iteration_id=iteration_id)
    if row is None:
        simulations.get(workspace_id=workspace_id, simulation_id=simulation_id)
        raise NotFound(f"No iteration {iteration_id} in the simulation {simulation_id}.")
    record = IterationRecord._make(row[:len(COLUMNS)])
    return IterationDetail(record, row.transcript, row.structured, verdicts_of(workspace_id, [record.id])[record.id])


class Posted(NamedTuple):
    name: str
    assertion_id: str | None
    passed: bool
    reason: str


def post_verdicts(*, workspace_id: str, simulation_id: str, iteration_id: str, evaluator: str,
                  verdicts: list[Posted]) -> IterationDetail:
    """The evaluator's verdicts on a finished iteration, each replacing its earlier one of the same
    name; the iteration's ``passed`` and its simulation's count of passed iterations follow."""
    if evaluator.strip().lower() == "engine":
        raise InvalidInput("evaluator: \"engine\" names the verdicts of the simulation itself; name yours otherwise.")
    names = [v.name.strip().lower() for v in verdicts]
    if len(set(names)) != len(names):
        raise InvalidInput("verdicts: each verdict's name must be unique within one post.")
    with database.atomic():
        record = simulations.lock(workspace_id, simulation_id)
        query = _I.in_workspace(workspace_id, _I.status, _I.passed).where(
            (_I.simulation == simulation_id) & (_I.id == iteration_id))
        row = (query.for_update() if is_postgres() else query).tuples().first()
        if row is None:
            raise NotFound(f"No iteration {iteration_id} in the simulation {simulation_id}.")
        status, was_passed = row
        if status != "completed":
            raise Conflict(f"The iteration is {status}: verdicts are posted on a completed iteration.")
        known = {a["id"] for a in record.assertions}
        for index, verdict in enumerate(verdicts):
            if verdict.assertion_id is not None and verdict.assertion_id not in known:
                raise InvalidInput(f"verdicts[{index}].assertionId: {verdict.assertion_id} is no assertion of this "
                                   "simulation.")
        kinds = {a["id"]: a["kind"] for a in record.assertions}
        now = utcnow()
        # The evaluator's earlier verdicts of the same names, replaced: one statement for the post.
        _V.delete().where((_V.iteration == iteration_id) & (_V.evaluator == evaluator)
                          & _V.name.in_([v.name for v in verdicts])).execute()
        count = _V.in_workspace(workspace_id, _V.id).where(_V.iteration == iteration_id).count()
        if count + len(verdicts) > MAX_VERDICTS_PER_ITERATION:
            raise Conflict(f"An iteration holds at most {MAX_VERDICTS_PER_ITERATION} verdicts; it has {count}.")
        try:
            with database.atomic():
                _V.insert_many([{"id": _V.id.default(), "workspace": workspace_id, "iteration": iteration_id,
                                 "simulation_id": simulation_id, "assertion_id": v.assertion_id, "name": v.name,
                                 "kind": kinds.get(v.assertion_id, "external"), "evaluator": evaluator,
                                 "passed": v.passed, "reason": v.reason, "created_at": now}
                                for v in verdicts]).execute()
        except IntegrityError:  # the same names posted at once by a twin request, which won
            raise Conflict("Another post of the same verdicts was stored at the same time; post again.") from None
        failing = _V.in_workspace(workspace_id, _V.id).where((_V.iteration == iteration_id) & ~_V.passed).exists()
        passed = not failing
        if passed != was_passed:
            _I.update(passed=passed).where(_I.id == iteration_id).execute()
            S = Simulation
            S.update(passed_count=S.passed_count + (1 if passed else 0) - (1 if was_passed else 0),
                     updated_at=now).where(S.id == simulation_id).execute()
    return get(workspace_id=workspace_id, simulation_id=simulation_id, iteration_id=iteration_id)
