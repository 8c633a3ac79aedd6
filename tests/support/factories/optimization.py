"""Optimization: runs and their solutions, made through the domain as the API makes them, and rows
moved to a state or a moment that a list test needs."""
from __future__ import annotations

from datetime import datetime

from models.kernel.db import session
from tests.support.factories.identity import Actor, principal
from tests.support.threads import drain


def optimization_run(actor: Actor, agent_id: str, feedback_ids: list[str] | None = None, *,
                     optimizer: str = "external", instructions: str | None = None) -> str:
    """A generating run of the actor's workspace on the agent's feedback (an external optimizer's
    by default: no endpoint needed); its id."""
    from models.optimization import runs
    with session():
        return runs.create(principal(actor), workspace_id=actor.workspace_id, agent_id=agent_id,
                           feedback_ids=feedback_ids, optimizer=optimizer, instructions=instructions).id


def proposal(feedback_ids: list[str], *, title: str = "Confirm bookings aloud", path: str = "/prompt",
             new_value="You book tables. Repeat the date and time back before you end the call.",
             explanation: str = "Callers hung up unsure whether the booking was made.") -> dict:
    return {"title": title, "explanation": explanation, "path": path, "newValue": new_value,
            "feedbackIds": feedback_ids}


def run_solutions(actor: Actor, run_id: str, proposals: list[dict], *, finish: bool = True) -> list[str]:
    """``proposals`` posted to an external run (and the run finished: pendingReview); the ids of
    its solutions in display order."""
    from models.optimization import runs, solutions
    with session():
        solutions.add_external(workspace_id=actor.workspace_id, run_id=run_id, proposals=proposals,
                               user_id=actor.user_id)
        if finish:
            runs.finish_external(workspace_id=actor.workspace_id, run_id=run_id)
        by_run, _ = solutions.of_runs(actor.workspace_id, [run_id])
    return [s.id for s in by_run[run_id]]


def set_run(actor: Actor, run_id: str, *, status: str | None = None, created_at: datetime | None = None,
            feedback_count: int | None = None) -> None:
    """A run's row set as a list test needs it (a status reached without its path, a moment); the
    workspace's tally of runs by status moved with it, as the domain moves it."""
    from models.kernel.db import database
    from models.optimization import runs
    from models.optimization.tables import OptimizationRun
    changes = {k: v for k, v in (("status", status), ("created_at", created_at), ("feedback_count", feedback_count))
               if v is not None}
    with session(), database.atomic():
        before = runs.locked(actor.workspace_id, run_id).status
        OptimizationRun.update(**changes).where((OptimizationRun.workspace == actor.workspace_id)
                                                & (OptimizationRun.id == run_id)).execute()
        if status is not None and status != before:
            runs.moved(actor.workspace_id, before, status)


def generate(*, wait_s: float = 0.0, **settings) -> int:
    """The optimization worker's work done in this thread, as its threads do it: every due run
    claimed and worked on until none is due; with ``wait_s``, until none has been due for that
    long (a failed attempt is due again after a short delay). ``settings`` are the Settings'
    fields (llm_base_url, optimization_lease_s...). Returns how many claims were worked."""
    from api.optimization_worker import OptimizationWorkers
    from core.settings import Settings
    return drain(OptimizationWorkers(Settings(**{"optimization_lease_s": 0.4, **settings})), wait_s)
