"""The tables of optimization: a run, the feedback it works from, its solutions and the feedback
each solution addresses (models.optimization)."""
from __future__ import annotations

from peewee import BigIntegerField, CharField, CompositeKey, DateTimeField, ForeignKeyField, IntegerField, TextField

from models.feedback.tables import Feedback
from models.kernel.db import JSONField, new_id, utcnow
from models.kernel.scoping import WorkspaceScoped


class OptimizationRun(WorkspaceScoped):
    id = CharField(primary_key=True, default=new_id)
    agent_id = CharField()
    status = CharField(max_length=16)  # generating, pendingReview, completed, failed
    optimizer = CharField(max_length=16)  # builtin or external
    instructions = TextField(null=True)
    base_version_id = CharField(null=True)  # the agent's head when the run started
    feedback_count = IntegerField()
    solution_count = IntegerField(default=0)
    accepted_count = IntegerField(default=0)
    rejected_count = IntegerField(default=0)
    error = TextField(null=True)
    dropped = JSONField(null=True)  # proposals refused as invalid: [{title, path, reason}]
    # Generation is leased work (models.kernel.leases): attempts taken and until when the current
    # one is its worker's; an external optimizer's run holds its deadline here.
    attempts = IntegerField(default=0)
    lease_until = DateTimeField(null=True)
    created_by = CharField()
    created_at = DateTimeField(default=utcnow)
    updated_at = DateTimeField(default=utcnow)
    completed_at = DateTimeField(null=True)

    class Meta:
        table_name = "optimization_run"
        indexes = (
            (("workspace", "created_at", "id"), False),
            # The sort on status breaks ties on created_at then id: one index serves it and a status filter.
            (("workspace", "status", "created_at", "id"), False),
            (("workspace", "agent_id", "created_at"), False),
            (("workspace", "feedback_count", "id"), False),
            (("workspace", "solution_count", "id"), False),
            (("status", "lease_until"), False),
        )


class RunTally(WorkspaceScoped):
    """A workspace's number of runs in each status: the unfiltered list's summary and total are
    these few rows, not a count of every run (two counts of 100,000 runs cost more than the page).
    Whatever creates or deletes a run, or moves its status, moves these in the same transaction
    (models.optimization.runs.tally); a workspace's deletion takes them with it."""
    status = CharField(max_length=16)
    runs = BigIntegerField()

    class Meta:
        table_name = "optimization_run_tally"
        primary_key = CompositeKey("workspace", "status")


class RunFeedback(WorkspaceScoped):
    run = ForeignKeyField(OptimizationRun, on_delete="CASCADE", backref="+", index=False)
    feedback = ForeignKeyField(Feedback, on_delete="CASCADE", backref="+")

    class Meta:
        table_name = "optimization_run_feedback"
        primary_key = CompositeKey("run", "feedback")


class Solution(WorkspaceScoped):
    id = CharField(primary_key=True, default=new_id)
    run = ForeignKeyField(OptimizationRun, on_delete="CASCADE", backref="+", index=False)
    title = TextField()
    change = JSONField()  # {path, oldValue, newValue, diff}
    explanation = TextField()
    display_order = IntegerField()
    decision = CharField(max_length=16, null=True)  # accepted or rejected, once reviewed
    patch_decisions = JSONField(null=True)  # {decision, decidedBy, decidedAt, note, versionId}
    version_id = CharField(null=True)  # the version its acceptance made
    created_at = DateTimeField(default=utcnow)
    reviewed_at = DateTimeField(null=True)

    class Meta:
        indexes = ((("run", "display_order"), False),)


class SolutionFeedback(WorkspaceScoped):
    solution = ForeignKeyField(Solution, on_delete="CASCADE", backref="+", index=False)
    feedback = ForeignKeyField(Feedback, on_delete="CASCADE", backref="+")

    class Meta:
        table_name = "solution_feedback"
        primary_key = CompositeKey("solution", "feedback")
