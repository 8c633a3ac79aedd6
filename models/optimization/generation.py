"""The generation of a run's solutions: leased work (models.kernel.leases) over optimization_run.

A run is due while it is generating and holds no live lease: a built-in run from its creation, an
external one once its deadline (its lease, set at creation) has passed. A worker claims it (the
lease set, attempts + 1), asks the endpoint (models.optimization.optimizer) while renewing the
lease, and stores the outcome only while the run still holds the claim's token (its lease's end):
a late outcome of a lease that ran out, the run since taken by another worker, deleted or
finished, changes nothing. A failed attempt is due again after a delay; after MAX_ATTEMPTS the run
fails with the last reason. So a restart mid-run resumes it (the lease runs out, another worker
takes it) and never leaves it generating for ever. An external run claimed past its deadline fails.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import NamedTuple

from peewee import JOIN

from models.calls.tables import Call
from models.feedback.tables import Feedback
from models.kernel.db import database, utcnow
from models.kernel.errors import InvalidInput
from models.kernel.leases import LeasedWork
from models.kernel.scoping import same_workspace
from models.optimization import runs, solutions
from models.optimization.optimizer import FeedbackItem
from models.optimization.tables import OptimizationRun, RunFeedback

MAX_ATTEMPTS = 3
MAX_DROPPED_IN_ERROR = 5


class Claimed(NamedTuple):
    run_id: str
    workspace_id: str
    optimizer: str
    attempt: int
    lease_token: datetime  # the lease's end as set: a renewal or an outcome holds only for it


_RUNS = LeasedWork(
    table="optimization_run", key="id",
    due="w.status = 'generating' AND (w.lease_until IS NULL OR w.lease_until < {p})",
    order="w.created_at, w.id",
    claim_sets="lease_until = {p}, attempts = attempts + 1, updated_at = {p}",
    returning="id, workspace_id, optimizer, attempts", token="lease_until")


def claim(lease_s: float, now: datetime | None = None) -> Claimed | None:
    """The oldest due run, leased to the caller for ``lease_s`` seconds, or None."""
    now = now or utcnow()
    until = now + timedelta(seconds=lease_s)
    row = _RUNS.claim(until, now, now)
    return None if row is None else Claimed(row[0], row[1], row[2], row[3], until)


def renew(job: Claimed, lease_s: float) -> Claimed | None:
    """The lease extended, or None if the run is no longer this worker's."""
    until = utcnow() + timedelta(seconds=lease_s)
    if not _RUNS.renew(job.run_id, token=job.lease_token, until=until):
        return None
    return job._replace(lease_token=until)


def _still_mine(job: Claimed):
    R = OptimizationRun
    return (R.id == job.run_id) & (R.status == "generating") & (R.lease_until == job.lease_token)


class Inputs(NamedTuple):
    config: dict
    feedback: list[FeedbackItem]
    instructions: str | None


def inputs(job: Claimed) -> Inputs:
    """What the optimizer is asked about: the configuration the run started from, and its
    feedback with its call's summary and transcript."""
    run = runs.get(workspace_id=job.workspace_id, run_id=job.run_id)
    F = Feedback
    rows = (RunFeedback.in_workspace(job.workspace_id, F.id, F.title, F.description, F.severity, Call.summary,
                                     Call.transcript)
            .join(F, on=same_workspace(F.id == RunFeedback.feedback, F, RunFeedback))
            .join(Call, on=same_workspace(Call.id == F.call_id, Call, F), join_type=JOIN.LEFT_OUTER)
            .where(RunFeedback.run == job.run_id).order_by(F.number).tuples())
    return Inputs(solutions.base_config(run), [FeedbackItem(*row) for row in rows], run.instructions)


def complete(job: Claimed, proposals: list) -> str | None:
    """The proposals checked; the valid ones stored and the run pendingReview, the others in its
    ``dropped`` with their reason; with none valid, failed with the reasons. Returns the run's
    new status, or None if it is no longer this worker's."""
    with database.atomic():
        R = OptimizationRun
        # The run's row locked by an update under the claim's token: only the holder goes on.
        if not R.update(updated_at=utcnow()).where(_still_mine(job)).execute():
            return None
        run = runs.get(workspace_id=job.workspace_id, run_id=job.run_id)
        config = solutions.base_config(run)
        run_feedback = set(runs.feedback_ids(job.workspace_id, job.run_id))
        valid, dropped = [], []
        for proposal in proposals:
            try:
                valid.append(solutions.check(proposal, config, run_feedback))
            except InvalidInput as exc:
                title = proposal.get("title") if isinstance(proposal, dict) else None
                path = proposal.get("path") if isinstance(proposal, dict) else None
                dropped.append({"title": title[:200] if isinstance(title, str) else None,
                                "path": path[:500] if isinstance(path, str) else None, "reason": exc.message})
        now = utcnow()
        if not valid:
            reasons = "; ".join(d["reason"] for d in dropped[:MAX_DROPPED_IN_ERROR])
            error = ("The optimizer proposed no solution." if not dropped else
                     f"The optimizer proposed no valid solution ({len(dropped)} dropped: {reasons}).")
            R.update(status="failed", error=error, dropped=dropped or None, lease_until=None, updated_at=now).where(
                R.id == job.run_id).execute()
            runs.moved(job.workspace_id, "generating", "failed")
            return "failed"
        solutions.store(run, valid, user_id=run.created_by)
        R.update(status="pendingReview", error=None, dropped=dropped or None, lease_until=None,
                 updated_at=now).where(R.id == job.run_id).execute()
        runs.moved(job.workspace_id, "generating", "pendingReview")
        return "pendingReview"


def fail(job: Claimed, error: str, *, retry: bool, retry_in_s: float = 5.0) -> str | None:
    """The attempt failed: due again after ``retry_in_s`` while attempts remain and ``retry``,
    else failed for good with ``error``. Returns the run's status after, or None if it is no
    longer this worker's."""
    final = not retry or job.attempt >= MAX_ATTEMPTS
    if final and retry:
        error = f"Generation failed after {job.attempt} attempts: {error}"
    now = utcnow()
    R = OptimizationRun
    changes = ({R.status: "failed", R.error: error, R.lease_until: None} if final else
               {R.error: error, R.lease_until: now + timedelta(seconds=retry_in_s)})
    with database.atomic():
        if not R.update({**changes, R.updated_at: now}).where(_still_mine(job)).execute():
            return None
        if final:
            runs.moved(job.workspace_id, "generating", "failed")
    return "failed" if final else "generating"


def interrupted(job: Claimed) -> str | None:
    """A run claimed once more after MAX_ATTEMPTS (each earlier attempt's worker stopped mid-run):
    failed, with the last attempt's reason if one was recorded."""
    last = OptimizationRun.in_workspace(job.workspace_id, OptimizationRun.error).where(
        OptimizationRun.id == job.run_id).scalar()
    reason = last or "each attempt's worker stopped before it finished"
    return fail(job, f"Generation failed after {MAX_ATTEMPTS} attempts: {reason}", retry=False)


def expired(job: Claimed, timeout_s: float) -> str | None:
    """An external optimizer's run past its deadline: failed."""
    return fail(job, f"The external optimizer did not finish the run within {timeout_s:g} s.", retry=False)
