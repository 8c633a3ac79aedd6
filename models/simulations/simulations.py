"""Simulations: an agent or workflow version run against simulated callers, in the background.

A simulation is a version (its agent side: models.conversations.targets), callers (personas, each
with every scenario, or one script of lines), a number of conversations per caller and scenario,
the assertions of its suites (those assigned to the agent or workflow unless it names others),
and optionally voice mode. Everything it runs is fixed at creation (the agent side, the personas
as they were, the assertions): an edit afterwards changes nothing in it, and a re-run on another
version runs the same callers and assertions, so that the two compare (``regressions``).

Its iterations, one conversation each, are leased work (models.simulations.execution). Its status
follows them: queued until a worker takes the first, running, then completed once every iteration
has finished (failed when none completed: the endpoint failed every one), or cancelled. Its counts
move with its iterations in the same transaction.
"""
from __future__ import annotations

import functools
from datetime import datetime
from typing import NamedTuple

from peewee import fn

from models.assertions import suites
from models.assertions.assertions import assertions_of
from models.assertions.tables import AssertionSuite as Suite
from models.conversations import targets
from models.identity.principal import Principal
from models.integrations import llm
from models.kernel.db import after_commit, database, is_postgres, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.leases import announce_due
from models.kernel.pagination import Page, workspace_list
from models.kernel.sql import Prepared
from models.personas.personas import personas_by_id
from models.simulations import voice
from models.simulations.tables import Iteration, Simulation, Verdict

STATUSES = ("queued", "running", "completed", "failed", "cancelled")
FINISHED = ("completed", "failed", "cancelled")
MAX_PERSONAS = 20
MAX_SCENARIOS = 20
MAX_CONVERSATIONS = 20
MAX_ITERATIONS = 500
MAX_SCRIPT_LINES = 50
MAX_SUITES = 20


class Prices(NamedTuple):
    """What a million tokens cost (LLM_INPUT_COST_PER_MILLION, LLM_OUTPUT_COST_PER_MILLION)."""
    input_per_million: float = 0.0
    output_per_million: float = 0.0

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return round((prompt_tokens * self.input_per_million + completion_tokens * self.output_per_million) / 1e6, 6)


_prices = Prices()


def configure(prices: Prices) -> None:
    global _prices
    _prices = prices


def prices() -> Prices:
    return _prices


class SimulationRecord(NamedTuple):
    id: str
    workspace_id: str
    name: str
    entity_type: str
    entity_id: str
    version_id: str
    version_number: int
    agent_id: str
    personas: list
    scenarios: list
    script: list | None
    assertions: list
    suite_ids: list
    suite_id: str | None
    conversations: int
    max_turns: int
    voice: dict | None
    baseline_id: str | None
    status: str
    iteration_count: int
    running_count: int
    completed_count: int
    passed_count: int
    failed_count: int
    cancelled_count: int
    prompt_tokens: int
    completion_tokens: int
    cost: float
    created_by: str
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    @property
    def queued_count(self) -> int:
        return (self.iteration_count - self.running_count - self.completed_count - self.failed_count
                - self.cancelled_count)


_S = Simulation
COLUMNS = (_S.id, _S.workspace, _S.name, _S.entity_type, _S.entity_id, _S.version_id, _S.version_number,
           _S.agent_id, _S.personas, _S.scenarios, _S.script, _S.assertions, _S.suite_ids, _S.suite_id,
           _S.conversations, _S.max_turns, _S.voice, _S.baseline_id, _S.status, _S.iteration_count,
           _S.running_count, _S.completed_count, _S.passed_count, _S.failed_count, _S.cancelled_count,
           _S.prompt_tokens, _S.completion_tokens, _S.cost, _S.created_by, _S.created_at, _S.updated_at,
           _S.started_at, _S.finished_at)
_ONE = Prepared(lambda workspace_id, simulation_id: _S.in_workspace(workspace_id, *COLUMNS).where(
    _S.id == simulation_id))


# ---------------------------------------------------------------------------------------------
# Creation.

class Callers(NamedTuple):
    persona_ids: list[str] | None
    scenarios: list[dict]
    script: list[str] | None


def _persona_json(record) -> dict:
    return {"id": record.id, "name": record.name, "goal": record.goal, "traits": list(record.traits),
            "language": record.language, "openingLine": record.opening_line, "facts": dict(record.facts),
            "constraints": list(record.constraints), "endCondition": record.end_condition}


def _check_callers(callers: Callers, conversations: int) -> int:
    """The number of iterations the callers make, or InvalidInput naming the rule they break."""
    if (callers.persona_ids is None) == (callers.script is None):
        raise InvalidInput("Give either personaIds (simulated callers) or script (a caller's lines), not both "
                           "and not neither.")
    if not 1 <= conversations <= MAX_CONVERSATIONS:
        raise InvalidInput(f"conversations must be 1 to {MAX_CONVERSATIONS}.")
    if callers.script is not None:
        if not 1 <= len(callers.script) <= MAX_SCRIPT_LINES:
            raise InvalidInput(f"script must hold 1 to {MAX_SCRIPT_LINES} lines.")
        if callers.scenarios:
            raise InvalidInput("scenarios are told to personas: a scripted caller takes none.")
        return conversations
    if not 1 <= len(callers.persona_ids) <= MAX_PERSONAS:
        raise InvalidInput(f"personaIds must name 1 to {MAX_PERSONAS} personas.")
    if len(set(callers.persona_ids)) != len(callers.persona_ids):
        raise InvalidInput("personaIds names a persona twice.")
    if len(callers.scenarios) > MAX_SCENARIOS:
        raise InvalidInput(f"scenarios holds at most {MAX_SCENARIOS}.")
    names = [s["name"].strip().lower() for s in callers.scenarios]
    if len(set(names)) != len(names):
        raise InvalidInput("scenarios: each scenario's name must be unique.")
    count = len(callers.persona_ids) * max(1, len(callers.scenarios)) * conversations
    if count > MAX_ITERATIONS:
        raise InvalidInput(f"A simulation runs at most {MAX_ITERATIONS} conversations; personas × scenarios × "
                           f"conversations makes {count}.")
    return count


def _assertions(workspace_id: str, entity_type: str, entity_id: str, suite_ids: list[str] | None) -> tuple:
    if suite_ids is None:
        suite_ids = [s.id for s in suites.suites_for(workspace_id=workspace_id, entity_type=entity_type,
                                                          entity_id=entity_id)]
    if len(suite_ids) > MAX_SUITES:
        raise InvalidInput(f"suiteIds names at most {MAX_SUITES} suites.")
    if len(set(suite_ids)) != len(suite_ids):
        raise InvalidInput("suiteIds names a suite twice.")
    known = {row[0] for row in Suite.in_workspace(workspace_id, Suite.id).where(Suite.id.in_(suite_ids)).tuples()} \
        if suite_ids else set()
    if missing := [suite_id for suite_id in suite_ids if suite_id not in known]:
        raise NotFound(f"No unit-test suite {missing[0]} in this workspace.")
    found = assertions_of(workspace_id=workspace_id, suite_ids=suite_ids)
    return suite_ids, [{"id": a.id, "suiteId": a.suite_id, "name": a.name, "kind": a.kind, "params": a.params}
                       for a in found]


def _check_voices(personas: list[dict], agent_language: str) -> None:
    """Voice mode speaks each caller's turns in its language (a script's in the agent's): one the
    synthesiser has no voice for is refused now rather than failing every conversation."""
    for index, persona in enumerate(personas):
        try:
            voice.voice_for(persona["language"])
        except voice.VoiceError:
            raise InvalidInput(f"personaIds[{index}]: voice mode has no voice for the language "
                               f"{persona['language']!r} of the persona {persona['name']!r}.") from None
    if not personas:
        try:
            voice.voice_for(agent_language)
        except voice.VoiceError:
            raise InvalidInput(f"voice: voice mode has no voice for the agent's language {agent_language!r}, "
                               "in which a script is spoken.") from None


def create(principal: Principal, *, workspace_id: str, name: str, entity_type: str, entity_id: str,
           version_id: str | None, callers: Callers, conversations: int = 1, max_turns: int = 20,
           suite_ids: list[str] | None = None, voice: dict | None = None, suite_id: str | None = None,
           baseline_id: str | None = None) -> SimulationRecord:
    """A simulation, queued with its iterations. Unavailable without a chat-completions endpoint
    (both sides speak through it); NotFound for a version, persona or suite not of the workspace."""
    llm.required_for(workspace_id)
    count = _check_callers(callers, conversations)
    target = targets.resolve(workspace_id=workspace_id, entity_type=entity_type, entity_id=entity_id,
                             version_id=version_id)
    personas = []
    if callers.persona_ids is not None:
        found = personas_by_id(workspace_id=workspace_id, ids=callers.persona_ids)
        personas = [_persona_json(found[persona_id]) for persona_id in callers.persona_ids]
    if voice is not None:
        _check_voices(personas, target.agent.language)
    suite_ids, assertions = _assertions(workspace_id, entity_type, entity_id, suite_ids)
    now = utcnow()
    with database.atomic():
        row = Simulation.create(
            workspace=workspace_id, name=name, entity_type=entity_type, entity_id=entity_id,
            version_id=target.version_id, version_number=target.version_number, agent_id=target.agent_id,
            agent=target.agent._asdict(), personas=personas,
            scenarios=[{"name": s["name"].strip(), "description": s.get("description")} for s in callers.scenarios],
            script=callers.script, assertions=assertions, suite_ids=suite_ids, suite_id=suite_id,
            conversations=conversations, max_turns=max_turns, voice=voice, baseline_id=baseline_id, status="queued",
            iteration_count=count, created_by=principal.user_id, created_at=now, updated_at=now)
        persona_indexes = range(len(personas)) if personas else [None]
        scenario_indexes = range(len(callers.scenarios)) if callers.scenarios else [None]
        _queue(workspace_id, row.id, [(p, s) for p in persona_indexes for s in scenario_indexes
                                      for _ in range(conversations)], now)
    _announce()
    return get(workspace_id=workspace_id, simulation_id=row.id)


def _queue(workspace_id: str, simulation_id: str, callers: list[tuple[int | None, int | None]], now) -> None:
    """The simulation's iterations, queued: one per (persona index, scenario index), numbered from 1."""
    rows = [{"id": Iteration.id.default(), "workspace": workspace_id, "simulation": simulation_id, "number": number,
             "persona_index": persona_index, "scenario_index": scenario_index, "status": "queued",
             "prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0, "attempts": 0, "due_at": now, "created_at": now}
            for number, (persona_index, scenario_index) in enumerate(callers, 1)]
    for start in range(0, len(rows), 100):
        Iteration.insert_many(rows[start:start + 100]).execute()


def _announce() -> None:
    """This process's workers start on the queued iterations once they have committed (at the end
    of the request's unit of work, if any), not at their next poll."""
    after_commit(functools.partial(announce_due, Iteration._meta.table_name))


def rerun(principal: Principal, *, workspace_id: str, simulation_id: str, version_id: str | None,
          name: str | None = None) -> SimulationRecord:
    """The simulation's callers and assertions again, on ``version_id`` (the entity's live version,
    else its latest, when None), compared with it by ``regressions``."""
    base = get(workspace_id=workspace_id, simulation_id=simulation_id)
    llm.required_for(workspace_id)
    target = targets.resolve(workspace_id=workspace_id, entity_type=base.entity_type, entity_id=base.entity_id,
                             version_id=version_id)
    now = utcnow()
    with database.atomic():
        row = Simulation.create(
            workspace=workspace_id, name=name or base.name, entity_type=base.entity_type, entity_id=base.entity_id,
            version_id=target.version_id, version_number=target.version_number, agent_id=target.agent_id,
            agent=target.agent._asdict(), personas=base.personas, scenarios=base.scenarios, script=base.script,
            assertions=base.assertions, suite_ids=base.suite_ids, suite_id=base.suite_id,
            conversations=base.conversations, max_turns=base.max_turns, voice=base.voice, baseline_id=base.id,
            status="queued", iteration_count=base.iteration_count, created_by=principal.user_id, created_at=now,
            updated_at=now)
        source = (Iteration.in_workspace(workspace_id, Iteration.persona_index, Iteration.scenario_index)
                  .where(Iteration.simulation == base.id).order_by(Iteration.number).tuples())
        _queue(workspace_id, row.id, list(source), now)
    _announce()
    return get(workspace_id=workspace_id, simulation_id=row.id)


# ---------------------------------------------------------------------------------------------
# Reading.

def get(*, workspace_id: str, simulation_id: str) -> SimulationRecord:
    record = _ONE.first(SimulationRecord, workspace_id=workspace_id, simulation_id=simulation_id)
    if record is None:
        raise NotFound(f"No simulation {simulation_id} in this workspace.")
    return record


_FILTERS = {
    "entity_type": lambda params: _S.entity_type == params["entity_type"],
    "entity_id": lambda params: _S.entity_id == params["entity_id"],
    "suite_id": lambda params: _S.suite_id == params["suite_id"],
    "status": lambda params: _S.status == params["status"],
}


@functools.cache
def _page(names: tuple[str, ...]):
    return workspace_list(_S, COLUMNS, order_by=(_S.created_at.desc(), _S.id.desc()), names=names,
                          where=lambda params: [_FILTERS[name](params) for name in names])


def list_simulations(*, workspace_id: str, limit: int, offset: int, **filters) -> Page[SimulationRecord]:
    """Newest first; ``filters``: any of entity_type, entity_id, suite_id, status (None: no filter).
    One statement per page whatever the filters."""
    values = {name: value for name, value in filters.items() if value is not None}
    if ("entity_type" in values) != ("entity_id" in values):
        raise InvalidInput("entityType and entityId filter together: give both or neither.")
    return _page(tuple(sorted(values))).page(SimulationRecord, workspace_id=workspace_id, limit=limit,
                                             offset=offset, **values)


# ---------------------------------------------------------------------------------------------
# Changes.

def lock(workspace_id: str, simulation_id: str) -> SimulationRecord:
    """The simulation, its row locked (PostgreSQL) until the transaction ends; NotFound otherwise."""
    query = _S.in_workspace(workspace_id, *COLUMNS).where(_S.id == simulation_id)
    row = (query.for_update() if is_postgres() else query).tuples().first()
    if row is None:
        raise NotFound(f"No simulation {simulation_id} in this workspace.")
    return SimulationRecord._make(row)


def rename(*, workspace_id: str, simulation_id: str, name: str) -> SimulationRecord:
    with database.atomic():
        lock(workspace_id, simulation_id)
        _S.update(name=name, updated_at=utcnow()).where(_S.id == simulation_id).execute()
    return get(workspace_id=workspace_id, simulation_id=simulation_id)


def cancel(*, workspace_id: str, simulation_id: str) -> SimulationRecord:
    """Its queued and running iterations cancelled (a running one's worker stops at its next turn
    and stores nothing), the simulation cancelled; Conflict once it has finished."""
    with database.atomic():
        record = lock(workspace_id, simulation_id)
        if record.status in FINISHED:
            raise Conflict(f"The simulation has {record.status}: only a queued or running one can be cancelled.")
        now = utcnow()
        I = Iteration
        cancelled = I.update(status="cancelled", lease_until=None, finished_at=now).where(
            (I.simulation == simulation_id) & I.status.in_(("queued", "running"))).execute()
        _S.update(status="cancelled", running_count=0, cancelled_count=_S.cancelled_count + cancelled,
                  updated_at=now, finished_at=now).where(_S.id == simulation_id).execute()
    return get(workspace_id=workspace_id, simulation_id=simulation_id)


def delete(*, workspace_id: str, simulation_id: str) -> None:
    """Deleted with its iterations and verdicts; Conflict while it runs (cancel it first)."""
    with database.atomic():
        record = lock(workspace_id, simulation_id)
        if record.status not in FINISHED:
            raise Conflict(f"The simulation is {record.status}: cancel it before deleting it.")
        Verdict.delete().where((Verdict.workspace == workspace_id) & (Verdict.simulation_id == simulation_id)).execute()
        Iteration.delete().where(Iteration.simulation == simulation_id).execute()
        _S.delete().where(_S.id == simulation_id).execute()


# ---------------------------------------------------------------------------------------------
# Regressions.

class AssertionTally(NamedTuple):
    passed: int
    failed: int


class Change(NamedTuple):
    assertion_id: str
    suite_id: str | None
    name: str
    kind: str
    before: AssertionTally
    after: AssertionTally


class Comparison(NamedTuple):
    baseline: SimulationRecord
    current: SimulationRecord
    regressions: list[Change]  # passed every time before, failed at least once now
    fixed: list[Change]  # failed at least once before, passed every time now


def _tallies(workspace_id: str, simulation_ids: tuple[str, str]) -> dict[tuple[str, str], AssertionTally]:
    passed = fn.SUM(Verdict.passed.cast("INTEGER"))
    rows = (Verdict.in_workspace(workspace_id, Verdict.simulation_id, Verdict.assertion_id, passed,
                                 fn.COUNT(Verdict.id))
            .where(Verdict.simulation_id.in_(simulation_ids) & Verdict.assertion_id.is_null(False))
            .group_by(Verdict.simulation_id, Verdict.assertion_id).tuples())
    return {(sim, assertion): AssertionTally(int(ok or 0), int(total) - int(ok or 0))
            for sim, assertion, ok, total in rows}


def regressions(*, workspace_id: str, simulation_id: str, baseline_id: str | None = None) -> Comparison:
    """What changed between ``baseline_id`` (the simulation this one re-ran, when None) and this
    one, assertion by assertion (engine and external verdicts alike), in one statement."""
    current = get(workspace_id=workspace_id, simulation_id=simulation_id)
    baseline_id = baseline_id or current.baseline_id
    if baseline_id is None:
        raise InvalidInput("This simulation re-ran no other: name the one to compare with in baselineId.")
    if baseline_id == simulation_id:
        raise InvalidInput("baselineId must name another simulation than this one.")
    baseline = get(workspace_id=workspace_id, simulation_id=baseline_id)
    tallies = _tallies(workspace_id, (baseline.id, current.id))
    found, fixed = [], []
    for assertion in current.assertions:
        before = tallies.get((baseline.id, assertion["id"]))
        after = tallies.get((current.id, assertion["id"]))
        if before is None or after is None:
            continue
        change = Change(assertion["id"], assertion.get("suiteId"), assertion["name"], assertion["kind"], before, after)
        if before.failed == 0 and after.failed > 0:
            found.append(change)
        elif before.failed > 0 and after.failed == 0:
            fixed.append(change)
    return Comparison(baseline, current, found, fixed)

