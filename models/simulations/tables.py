"""The tables of simulations: a simulation, its iterations (one conversation each) and the verdicts
on each iteration (models.simulations)."""
from __future__ import annotations

from peewee import BooleanField, CharField, DateTimeField, FloatField, ForeignKeyField, IntegerField, TextField

from models.kernel.db import JSONField, new_id, utcnow
from models.kernel.scoping import WorkspaceScoped


class Simulation(WorkspaceScoped):
    id = CharField(primary_key=True, default=new_id)
    name = TextField()
    entity_type = CharField(max_length=16)  # agent or workflow
    entity_id = CharField()
    version_id = CharField()
    version_number = IntegerField()
    # What the iterations run, fixed at creation so that every iteration (and a retry after a
    # restart) runs the same: the agent side's script, the personas as they were, the scenarios,
    # the assertions of the suites (models.simulations.simulations.Definition).
    agent_id = CharField()
    agent = JSONField()
    personas = JSONField()
    scenarios = JSONField()
    script = JSONField(null=True)  # a scripted caller's lines, instead of personas
    assertions = JSONField()
    suite_ids = JSONField()
    suite_id = CharField(null=True)  # the suite a suite run ran (its history lists it)
    conversations = IntegerField()  # per persona and scenario
    max_turns = IntegerField()
    voice = JSONField(null=True)  # {telephone, snrDb}: voice mode, None in text mode
    baseline_id = CharField(null=True)  # the simulation this one re-ran
    status = CharField(max_length=16)  # queued, running, completed, failed, cancelled
    # Counts of the iterations, moved with them in the same transaction.
    iteration_count = IntegerField()
    running_count = IntegerField(default=0)
    completed_count = IntegerField(default=0)
    passed_count = IntegerField(default=0)
    failed_count = IntegerField(default=0)
    cancelled_count = IntegerField(default=0)
    prompt_tokens = IntegerField(default=0)
    completion_tokens = IntegerField(default=0)
    cost = FloatField(default=0.0)
    created_by = CharField()
    created_at = DateTimeField(default=utcnow)
    updated_at = DateTimeField(default=utcnow)
    started_at = DateTimeField(null=True)
    finished_at = DateTimeField(null=True)

    class Meta:
        table_name = "simulation"
        indexes = (
            (("workspace", "created_at", "id"), False),
            (("workspace", "entity_type", "entity_id", "created_at"), False),
            (("workspace", "suite_id", "created_at"), False),
        )


class Iteration(WorkspaceScoped):
    id = CharField(primary_key=True, default=new_id)
    simulation = ForeignKeyField(Simulation, on_delete="CASCADE", backref="+", index=False)
    number = IntegerField()  # 1.. within the simulation
    persona_index = IntegerField(null=True)  # into the simulation's personas (None: its script)
    scenario_index = IntegerField(null=True)  # into its scenarios (None: none)
    status = CharField(max_length=16)  # queued, running, completed, failed, cancelled
    passed = BooleanField(null=True)  # every verdict passed; None until it has verdicts
    transcript = JSONField(null=True)  # [Turn.as_json()]
    ended_by = CharField(max_length=16, null=True)
    duration_ms = IntegerField(null=True)
    structured = JSONField(null=True)
    word_error_rate = FloatField(null=True)  # voice mode: over every caller turn's words
    prompt_tokens = IntegerField(default=0)
    completion_tokens = IntegerField(default=0)
    cost = FloatField(default=0.0)
    error = TextField(null=True)
    # Leased work (models.kernel.leases): attempts taken, until when the current one is its
    # worker's, and when a failed attempt is due again.
    attempts = IntegerField(default=0)
    lease_until = DateTimeField(null=True)
    due_at = DateTimeField()
    created_at = DateTimeField(default=utcnow)
    started_at = DateTimeField(null=True)
    finished_at = DateTimeField(null=True)

    class Meta:
        table_name = "simulation_iteration"
        indexes = (
            (("simulation", "number"), True),
            (("workspace", "simulation", "number"), False),
            (("status", "due_at"), False),
        )


class Verdict(WorkspaceScoped):
    """One assertion's outcome on an iteration: the engine's (a rule or the judge) or an external
    evaluator's, posted back (its ``evaluator`` names it)."""
    id = CharField(primary_key=True, default=new_id)
    iteration = ForeignKeyField(Iteration, on_delete="CASCADE", backref="+", index=False)
    simulation_id = CharField()
    assertion_id = CharField(null=True)  # None for an external check that is no assertion of ours
    name = TextField()
    kind = CharField(max_length=16)  # an assertion's kind, or external
    evaluator = CharField(max_length=100)  # "engine", or the external evaluator's name
    passed = BooleanField()
    reason = TextField()
    created_at = DateTimeField(default=utcnow)

    class Meta:
        table_name = "simulation_verdict"
        indexes = (
            (("iteration", "evaluator", "name"), True),
            (("workspace", "simulation_id", "assertion_id"), False),
        )
