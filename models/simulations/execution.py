"""The execution of a simulation's iterations: leased work (models.kernel.leases) over
simulation_iteration, one conversation each.

An iteration is due while it is queued, or running with no live lease (its worker died, or its
last attempt failed and waits for its retry). A worker claims it (status running, the lease set,
attempts + 1; the simulation running with it), runs the conversation and the assertions with no
database connection held (``run``), and stores the outcome only while the iteration still holds
the claim's token (its lease's end) and is still running: a cancelled iteration, or one whose
lease ran out and was taken by another worker, keeps nothing of a late outcome. An attempt that
fails in a way that may pass (the endpoint unreachable, timing out, rate limiting) is due again
after a delay; after MAX_ATTEMPTS, or at once for a refused key, the iteration fails with the
reason. So a restart mid-run resumes the simulation, and never leaves it running for ever.
"""
from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import NamedTuple

from peewee import Case, fn

from models.assertions import evaluation
from models.assertions.assertions import AssertionRecord
from models.conversations import engine
from models.conversations.engine import AgentScript, Field, Heard, Persona, PersonaCaller, ScriptedCaller
from models.conversations.transcript import Conversation
from models.kernel.chat_completions import Endpoint, Usage
from models.kernel.db import database, utcnow
from models.kernel.leases import LeasedWork
from models.simulations.simulations import prices
from models.simulations.tables import Iteration, Simulation, Verdict

MAX_ATTEMPTS = 3


class Claimed(NamedTuple):
    iteration_id: str
    workspace_id: str
    simulation_id: str
    attempt: int
    lease_token: datetime  # the lease's end as set: a renewal or an outcome holds only for it


TABLE = Iteration._meta.table_name
_ITERATIONS = LeasedWork(
    table=TABLE, key="id",
    due="(w.status = 'queued' OR (w.status = 'running' AND w.lease_until < {p})) AND w.due_at <= {p}",
    order="w.due_at, w.simulation_id, w.number",
    claim_sets="status = 'running', lease_until = {p}, attempts = attempts + 1, started_at = COALESCE(started_at, {p})",
    returning="id, workspace_id, simulation_id, attempts", token="lease_until")


def claim(lease_s: float, now: datetime | None = None) -> Claimed | None:
    """The first due iteration, leased to the caller for ``lease_s`` seconds, or None. Its
    simulation moves to running with its first claimed iteration."""
    now = now or utcnow()
    until = now + timedelta(seconds=lease_s)
    with database.atomic():
        row = _ITERATIONS.claim(until, now, now, now)
        if row is None:
            return None
        job = Claimed(row[0], row[1], row[2], row[3], until)
        if job.attempt == 1:  # from queued: one more running
            S = Simulation
            S.update(running_count=S.running_count + 1, status="running", updated_at=now,
                     started_at=fn.COALESCE(S.started_at, now)).where(S.id == job.simulation_id).execute()
    return job


def renew(job: Claimed, lease_s: float) -> Claimed | None:
    """The lease extended, or None if the iteration is no longer this worker's."""
    until = utcnow() + timedelta(seconds=lease_s)
    if not _ITERATIONS.renew(job.iteration_id, token=job.lease_token, until=until):
        return None
    return job._replace(lease_token=until)


def _still_mine(job: Claimed):
    I = Iteration
    return (I.id == job.iteration_id) & (I.status == "running") & (I.lease_until == job.lease_token)


def still_running(job: Claimed) -> bool:
    """Whether the iteration is still this worker's to run (not cancelled, not taken over)."""
    return Iteration.in_workspace(job.workspace_id, Iteration.id).where(_still_mine(job)).exists()


# ---------------------------------------------------------------------------------------------
# What an iteration runs.

class Task(NamedTuple):
    agent: AgentScript
    persona: Persona | None
    script: list[str] | None
    max_turns: int
    assertions: list[AssertionRecord]
    voice: dict | None
    fields: list[Field]


def task(job: Claimed) -> Task:
    """The iteration's conversation and assertions, as its simulation fixed them."""
    S, I = Simulation, Iteration
    row = (I.in_workspace(job.workspace_id, I.persona_index, I.scenario_index, S.agent, S.personas, S.scenarios,
                          S.script, S.max_turns, S.assertions, S.voice)
           .join(S, on=(S.id == I.simulation)).where(I.id == job.iteration_id).tuples().first())
    persona_index, scenario_index, agent, personas, scenarios, script, max_turns, assertions, voice = row
    persona = None
    if persona_index is not None:
        p = personas[persona_index]
        scenario = scenarios[scenario_index] if scenario_index is not None else None
        situation = None
        if scenario is not None:
            situation = scenario["name"] + (f": {scenario['description']}" if scenario.get("description") else "")
        persona = Persona(p["name"], p["goal"], p["traits"], p["language"], p.get("openingLine"), p["facts"],
                          p["constraints"], p.get("endCondition"), situation)
    records = [AssertionRecord(a["id"], a["suiteId"], a["name"], a["kind"], a["params"]) for a in assertions]
    needed = evaluation.fields_needed(records)
    # A field the assertions read is extracted as any value the transcript gives it.
    fields = [Field(name, "string", None, None) for name in sorted(needed)]
    return Task(AgentScript(**agent), persona, script, max_turns, records, voice, fields)


class Outcome(NamedTuple):
    conversation: Conversation
    verdicts: list[tuple[AssertionRecord, evaluation.Verdict]]
    usage: Usage


def run(endpoint: Endpoint, work: Task, *, hear: Callable[[str], Heard] | None = None,
        stop: Callable[[], bool] = lambda: False) -> Outcome:
    """The conversation, the agent's structured output the assertions read, and a verdict on each
    assertion. ChatCompletionError when the endpoint fails (the iteration's attempt fails with
    it); engine.Cancelled when ``stop`` says so."""
    caller = ScriptedCaller(work.script) if work.script is not None else PersonaCaller(endpoint, work.persona)
    conversation = engine.converse(endpoint, work.agent, caller, max_turns=work.max_turns, hear=hear, stop=stop)
    usage = conversation.usage
    if work.fields:
        structured, used = engine.extract(endpoint, conversation, work.fields)
        conversation = conversation._replace(structured=structured)
        usage += used
    verdicts = []
    for assertion in work.assertions:
        if stop():
            raise engine.Cancelled()
        verdict = evaluation.evaluate(assertion, conversation, endpoint=endpoint)
        usage += verdict.usage
        verdicts.append((assertion, verdict))
    return Outcome(conversation, verdicts, usage)


# ---------------------------------------------------------------------------------------------
# Outcomes.

def _finish_simulation(simulation_id: str, now: datetime) -> None:
    """Completed once every iteration has finished (failed when none completed)."""
    S = Simulation
    done = S.completed_count + S.failed_count + S.cancelled_count
    S.update(status=Case(None, [(S.completed_count > 0, "completed")], "failed"), finished_at=now).where(
        (S.id == simulation_id) & (S.status == "running") & (done >= S.iteration_count)).execute()


def complete(job: Claimed, outcome: Outcome) -> bool:
    """The conversation and its verdicts stored, the iteration completed; False (nothing stored)
    if it is no longer this worker's."""
    conversation = outcome.conversation
    passed = all(v.passed for _, v in outcome.verdicts) if outcome.verdicts else None
    heard = [t for t in conversation.turns if t.heard is not None]
    wer = None
    if heard:  # over the words said, not the mean of the turns' rates
        said = sum(max(1, len(t.text.split())) for t in heard)
        wer = round(sum(t.wer * max(1, len(t.text.split())) for t in heard) / said, 4)
    usage = outcome.usage
    cost = prices().cost(usage.prompt_tokens, usage.completion_tokens)
    now = utcnow()
    I, S = Iteration, Simulation
    with database.atomic():
        stored = I.update(status="completed", passed=passed, transcript=[t.as_json() for t in conversation.turns],
                          ended_by=conversation.ended_by, duration_ms=conversation.duration_ms,
                          structured=conversation.structured, word_error_rate=wer, prompt_tokens=usage.prompt_tokens,
                          completion_tokens=usage.completion_tokens, cost=cost, error=None, lease_until=None,
                          finished_at=now).where(_still_mine(job)).execute()
        if not stored:
            return False
        if outcome.verdicts:
            Verdict.insert_many([
                {"id": Verdict.id.default(), "workspace": job.workspace_id, "iteration": job.iteration_id,
                 "simulation_id": job.simulation_id, "assertion_id": v.assertion_id, "name": a.name,
                 "kind": a.kind, "evaluator": "engine", "passed": v.passed, "reason": v.reason, "created_at": now}
                for a, v in outcome.verdicts]).execute()
        S.update(running_count=S.running_count - 1, completed_count=S.completed_count + 1,
                 passed_count=S.passed_count + (1 if passed else 0),
                 prompt_tokens=S.prompt_tokens + usage.prompt_tokens,
                 completion_tokens=S.completion_tokens + usage.completion_tokens, cost=S.cost + cost,
                 updated_at=now).where(S.id == job.simulation_id).execute()
        _finish_simulation(job.simulation_id, now)
    return True


def fail(job: Claimed, error: str, *, retry: bool, retry_in_s: float = 5.0) -> str | None:
    """The attempt failed: due again after ``retry_in_s`` while attempts remain and ``retry``, else
    the iteration failed for good with ``error``. Returns its status after, or None if it is no
    longer this worker's."""
    final = not retry or job.attempt >= MAX_ATTEMPTS
    if final and retry:
        error = f"The conversation failed after {job.attempt} attempts: {error}"
    now = utcnow()
    I, S = Iteration, Simulation
    changes = ({I.status: "failed", I.error: error, I.lease_until: None, I.finished_at: now} if final else
               {I.error: error, I.lease_until: now + timedelta(seconds=retry_in_s)})
    with database.atomic():
        if not I.update(changes).where(_still_mine(job)).execute():
            return None
        if final:
            S.update(running_count=S.running_count - 1, failed_count=S.failed_count + 1, updated_at=now).where(
                S.id == job.simulation_id).execute()
            _finish_simulation(job.simulation_id, now)
    return "failed" if final else "running"


def interrupted(job: Claimed) -> str | None:
    """An iteration claimed once more after MAX_ATTEMPTS (each earlier attempt's worker stopped
    mid-conversation): failed, with the last attempt's reason if one was recorded."""
    last = Iteration.in_workspace(job.workspace_id, Iteration.error).where(Iteration.id == job.iteration_id).scalar()
    reason = last or "each attempt's worker stopped before it finished"
    return fail(job, f"The conversation failed after {MAX_ATTEMPTS} attempts: {reason}", retry=False)
