"""Feedback raised from a finished iteration (a failed one above all): what went wrong in a
simulated conversation, filed on the agent or workflow it ran, with a ``reproduces`` reference to
the simulation, so that whoever fixes it can re-run the simulation on the fixed version and see
it pass."""
from __future__ import annotations

from models.feedback import feedbacks, references
from models.feedback.feedbacks import DESCRIPTION_MAX_CHARS, FeedbackRecord
from models.identity.principal import Principal
from models.kernel.db import database
from models.kernel.errors import Conflict
from models.simulations import iterations, simulations

# What a description quotes of the transcript and of the failed verdicts.
QUOTED_VERDICTS = 10


def _description(simulation, detail) -> str:
    record = detail.iteration
    lines = [f"Simulation \"{simulation.name}\", version {simulation.version_number} of the {simulation.entity_type}, "
             f"iteration {record.number}: {record.status}" + (f" ({record.error})" if record.error else "") + "."]
    failed = [v for v in detail.verdicts if not v.passed][:QUOTED_VERDICTS]
    if failed:
        lines.append("Failed checks:")
        lines += [f"- {v.name}: {v.reason}" for v in failed]
    text = "\n".join(lines)
    return text if len(text) <= DESCRIPTION_MAX_CHARS else text[:DESCRIPTION_MAX_CHARS - 1] + "…"


def raise_feedback(principal: Principal, *, workspace_id: str, simulation_id: str, iteration_id: str,
                   title: str | None = None, description: str | None = None, severity: int = 3) -> FeedbackRecord:
    """A feedback on the simulation's agent or workflow from a finished iteration: one that failed
    (its conversation, or a check) above all, but also one that passed its checks while a person
    sees what none caught; Conflict for one that has not finished or was cancelled."""
    simulation = simulations.get(workspace_id=workspace_id, simulation_id=simulation_id)
    detail = iterations.get(workspace_id=workspace_id, simulation_id=simulation_id, iteration_id=iteration_id)
    record = detail.iteration
    if record.status not in ("completed", "failed"):
        raise Conflict(f"The iteration is {record.status}: feedback is raised from a finished conversation.")
    failed = record.status == "failed" or record.passed is False
    default_title = f"{simulation.name}: iteration {record.number} {'failed' if failed else 'needs a look'}"
    with database.atomic():
        feedback = feedbacks.create(
            principal, workspace_id=workspace_id, title=title or default_title[:feedbacks.TITLE_MAX_CHARS],
            description=description or _description(simulation, detail), severity=severity, created_by="simulation",
            **({"agent_id": simulation.entity_id} if simulation.entity_type == "agent"
               else {"workflow_id": simulation.entity_id}))
        references.add(workspace_id=workspace_id, feedback_id=feedback.id, entity_type="simulation",
                       entity_id=simulation_id, relation="reproduces", created_by=principal.user_id,
                       label=f"{simulation.name}, iteration {record.number}"[:references.LABEL_MAX_CHARS])
    return feedbacks.get(workspace_id=workspace_id, feedback_id=feedback.id)
