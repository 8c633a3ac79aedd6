"""Solutions: the changes an optimizer proposes in a run, and their review.

Every proposal, the built-in optimizer's or an external one's, is checked the same way
(``check``): a title and an explanation, a change to the agent's configuration that the agent's
schema accepts (models.optimization.changes), and the feedback it addresses, among the run's.
Stored solutions give each of their feedback a ``proposed_fix`` reference and its ``solutionId``.

Accepting one applies its change as a new version of the agent, named after it, that closes its
feedback (resolved, ``fixed_by``). Every decision locks its run's row first (then an acceptance
the agent's, models.configs.versioning), so concurrent decisions on one run are taken one at a
time and the run completes exactly once, when its last solution is decided. A change whose path the agent's head no longer
holds as proposed is refused (409): it was proposed against what has changed since.
"""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import NamedTuple

from models.configs import schemas, versioning
from models.configs.tables import Agent
from models.feedback import references, resolution
from models.feedback.tables import Feedback
from models.identity.principal import Principal
from models.kernel.db import database, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.text import text_problem
from models.optimization import changes, runs
from models.optimization.tables import OptimizationRun, Solution, SolutionFeedback

TITLE_MAX_CHARS = 200
EXPLANATION_MAX_CHARS = 5000
NOTE_MAX_CHARS = 2000
MAX_PER_POST = 50
MAX_PER_RUN = 200


class SolutionRecord(NamedTuple):
    id: str
    workspace_id: str
    run_id: str
    title: str
    change: dict
    explanation: str
    display_order: int
    decision: str | None
    patch_decisions: dict | None
    version_id: str | None
    created_at: datetime
    reviewed_at: datetime | None


class Proposal(NamedTuple):
    """A checked proposal, ready to store."""
    title: str
    explanation: str
    change: dict
    feedback_ids: list[str]


_S = Solution
COLUMNS = (_S.id, _S.workspace, _S.run, _S.title, _S.change, _S.explanation, _S.display_order, _S.decision,
           _S.patch_decisions, _S.version_id, _S.created_at, _S.reviewed_at)


def _text(value, field: str, most: int, *, multiline: bool) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field} must be a non-empty string.")
    value = value.strip()
    if len(value) > most:
        raise InvalidInput(f"{field}: at most {most} characters.")
    problem = text_problem(value, multiline=multiline)
    if problem:
        raise InvalidInput(f"{field} {problem}.")
    return value


def check(proposal, config: dict, run_feedback: set[str]) -> Proposal:
    """``proposal`` ({title, explanation, path, newValue, feedbackIds}) checked against the
    configuration it changes and the run's feedback; InvalidInput naming the first problem."""
    if not isinstance(proposal, dict):
        raise InvalidInput("a solution must be an object.")
    title = _text(proposal.get("title"), "title", TITLE_MAX_CHARS, multiline=False)
    explanation = _text(proposal.get("explanation"), "explanation", EXPLANATION_MAX_CHARS, multiline=True)
    if "newValue" not in proposal:
        raise InvalidInput("newValue is required.")
    ids = proposal.get("feedbackIds")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        raise InvalidInput("feedbackIds must list at least one of the run's feedback ids.")
    for feedback_id in ids:
        if feedback_id not in run_feedback:
            raise InvalidInput(f"feedbackIds: {feedback_id[:40]} is not one of the run's feedback.")
    change = changes.propose(config, proposal.get("path"), proposal["newValue"])
    return Proposal(title, explanation, change, list(dict.fromkeys(ids)))


def store(run: runs.RunRecord, proposals: list[Proposal], *, user_id: str) -> None:
    """The proposals stored as the run's next solutions (in the caller's transaction, the run
    locked), each feedback referencing the solution proposed for it."""
    if run.solution_count + len(proposals) > MAX_PER_RUN:
        raise InvalidInput(f"A run holds at most {MAX_PER_RUN} solutions; it has {run.solution_count}.")
    now = utcnow()
    for order, proposal in enumerate(proposals, start=run.solution_count + 1):
        solution = Solution.create(workspace=run.workspace_id, run=run.id, title=proposal.title,
                                   change=proposal.change, explanation=proposal.explanation, display_order=order,
                                   created_at=now)
        SolutionFeedback.insert_many([{"workspace": run.workspace_id, "solution": solution.id, "feedback": f}
                                      for f in proposal.feedback_ids]).execute()
        Feedback.update(solution_id=solution.id, updated_at=now).where(
            (Feedback.workspace == run.workspace_id) & Feedback.id.in_(proposal.feedback_ids)).execute()
        for feedback_id in proposal.feedback_ids:
            references.add(workspace_id=run.workspace_id, feedback_id=feedback_id, entity_type="solution",
                           entity_id=solution.id, relation="proposed_fix", created_by=user_id,
                           label=proposal.title[:100])
    OptimizationRun.update(solution_count=OptimizationRun.solution_count + len(proposals), updated_at=now).where(
        OptimizationRun.id == run.id).execute()


def add_external(*, workspace_id: str, run_id: str, proposals: list, user_id: str) -> runs.RunRecord:
    """An external optimizer's solutions added to its generating run, all or none: InvalidInput
    naming the index and the reason of the first that fails its check."""
    if not isinstance(proposals, list) or not 1 <= len(proposals) <= MAX_PER_POST:
        raise InvalidInput(f"solutions must list 1 to {MAX_PER_POST} solutions.")
    with database.atomic():
        run = runs.locked(workspace_id, run_id)
        if run.optimizer != "external":
            raise Conflict(f"Optimization run {run_id} is the built-in optimizer's: it takes no posted solutions.")
        if run.status != "generating":
            raise Conflict(f"Optimization run {run_id} is {run.status}: solutions are posted while it is generating.")
        config = base_config(run)
        run_feedback = set(runs.feedback_ids(workspace_id, run_id))
        checked = []
        for index, proposal in enumerate(proposals):
            try:
                checked.append(check(proposal, config, run_feedback))
            except InvalidInput as exc:
                raise InvalidInput(f"solutions[{index}]: {exc.message}") from None
        store(run, checked, user_id=user_id)
    return runs.get(workspace_id=workspace_id, run_id=run_id)


def base_config(run: runs.RunRecord) -> dict:
    """The configuration the run's solutions change: the agent's head when the run started."""
    config = versioning.config_of(run.workspace_id, run.base_version_id) if run.base_version_id else None
    return schemas.complete("agent", config or {})


# --- reads --------------------------------------------------------------------------------------

def get(*, workspace_id: str, solution_id: str) -> SolutionRecord:
    row = _S.in_workspace(workspace_id, *COLUMNS).where(_S.id == solution_id).tuples().first()
    if row is None:
        raise NotFound(f"No solution {solution_id} in this workspace.")
    return SolutionRecord._make(row)


def of_runs(workspace_id: str, run_ids: list[str]) -> tuple[dict[str, list[SolutionRecord]], dict[str, list[str]]]:
    """The solutions of each run, in display order, and the feedback ids of each solution: two
    statements whatever the number of runs."""
    by_run: dict[str, list[SolutionRecord]] = defaultdict(list)
    feedback: dict[str, list[str]] = defaultdict(list)
    if not run_ids:
        return by_run, feedback
    for row in (_S.in_workspace(workspace_id, *COLUMNS).where(_S.run.in_(run_ids))
                .order_by(_S.run, _S.display_order).tuples()):
        by_run[row[2]].append(SolutionRecord._make(row))
    ids = [s.id for solutions in by_run.values() for s in solutions]
    if ids:
        SF = SolutionFeedback
        for solution_id, feedback_id in (SF.in_workspace(workspace_id, SF.solution, SF.feedback)
                                         .where(SF.solution.in_(ids)).order_by(SF.solution, SF.feedback).tuples()):
            feedback[solution_id].append(feedback_id)
    return by_run, feedback


# --- review -------------------------------------------------------------------------------------

def _note(note: str | None) -> str | None:
    if note is None:
        return None
    return _text(note, "note", NOTE_MAX_CHARS, multiline=True)


def _undecided(workspace_id: str, solution_id: str, run: runs.RunRecord) -> SolutionRecord:
    solution = get(workspace_id=workspace_id, solution_id=solution_id)
    if run.status != "pendingReview":
        raise Conflict(f"Optimization run {run.id} is {run.status}: its solutions are decided while it is "
                       "pendingReview.")
    if solution.decision is not None:
        raise Conflict(f"Solution {solution_id} is {solution.decision} already.")
    return solution


def _decided(principal: Principal, solution: SolutionRecord, run: runs.RunRecord, decision: str, note: str | None,
             version_id: str | None) -> None:
    """The decision recorded, the run's count moved, and the run completed if it was the last."""
    now = utcnow()
    Solution.update(decision=decision, reviewed_at=now, version_id=version_id, patch_decisions={
        "decision": decision, "decidedBy": principal.user_id, "decidedAt": now.isoformat(timespec="milliseconds") + "Z",
        "note": note, "versionId": version_id}).where(Solution.id == solution.id).execute()
    R = OptimizationRun
    counted = R.accepted_count if decision == "accepted" else R.rejected_count
    R.update({counted: counted + 1, R.updated_at: now}).where(R.id == run.id).execute()
    if run.accepted_count + run.rejected_count + 1 >= run.solution_count:
        if R.update(status="completed", completed_at=now, updated_at=now).where(
                (R.id == run.id) & (R.status == "pendingReview")).execute():
            runs.moved(run.workspace_id, "pendingReview", "completed")


def _locked_run_of(workspace_id: str, solution_id: str) -> runs.RunRecord:
    """The run of the solution, its row locked: a write as the transaction's first statement, so
    that on SQLite it takes the write lock before anything is read (models.configs.versioning)."""
    R = OptimizationRun
    of_solution = _S.in_workspace(workspace_id, _S.run).where(_S.id == solution_id)
    row = R.update(updated_at=R.updated_at).where((R.workspace == workspace_id) & R.id.in_(of_solution)).returning(
        R.id).tuples().execute()
    found = list(row)
    if not found:
        raise NotFound(f"No solution {solution_id} in this workspace.")
    return runs.get(workspace_id=workspace_id, run_id=found[0][0])


def accept(principal: Principal, *, workspace_id: str, solution_id: str, note: str | None = None) -> SolutionRecord:
    """The solution's change applied as a new head version of the agent that closes its feedback."""
    note = _note(note)
    with versioning.writing():
        # The run first, then the agent: a reject takes the run alone, a save of the agent the agent alone.
        run = _locked_run_of(workspace_id, solution_id)
        solution = _undecided(workspace_id, solution_id, run)
        agent_id = run.agent_id
        head = versioning.lock(Agent, workspace_id, agent_id).head_version_id
        config = schemas.complete("agent", versioning.config_of(workspace_id, head) if head else {})
        change = solution.change
        if changes.value_at(config, change["path"]) != change["oldValue"]:
            raise Conflict(f"The agent's {change['path']} changed since the solution was proposed: it no longer "
                           "holds the value the change replaces. Start a new run on the agent's current version.")
        try:
            new_config = changes.applied(config, change["path"], change["newValue"])
        except InvalidInput as exc:
            raise Conflict(f"The solution no longer applies to the agent's current version: {exc.message}") from None
        feedback_ids = [row[0] for row in SolutionFeedback.in_workspace(workspace_id, SolutionFeedback.feedback)
                        .where(SolutionFeedback.solution == solution_id).tuples()]
        closes = [{"id": i, "number": n, "title": t} for i, n, t in
                  Feedback.in_workspace(workspace_id, Feedback.id, Feedback.number, Feedback.title)
                  .where(Feedback.id.in_(feedback_ids)).order_by(Feedback.number).tuples()]
        version = versioning.append(Agent, principal, workspace_id, agent_id, new_config,
                                    name=f"Solution: {solution.title}"[:200], parent_id=head, parent_config=config,
                                    closed_feedbacks=closes)
        versioning.move_head(Agent, agent_id, version.id)
        resolution.close_by_version(workspace_id=workspace_id, feedback_ids=feedback_ids, version_id=version.id,
                                    user_id=principal.user_id, solution_id=solution_id)
        _decided(principal, solution, run, "accepted", note, version.id)
    return get(workspace_id=workspace_id, solution_id=solution_id)


def reject(principal: Principal, *, workspace_id: str, solution_id: str, note: str | None = None) -> SolutionRecord:
    note = _note(note)
    with database.atomic():
        run = _locked_run_of(workspace_id, solution_id)
        solution = _undecided(workspace_id, solution_id, run)
        _decided(principal, solution, run, "rejected", note, None)
    return get(workspace_id=workspace_id, solution_id=solution_id)
