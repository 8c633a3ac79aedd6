"""Live calls: calls registered as their runtime registers them, moved to a status along the legal
moves, and control requests sent to them."""
from __future__ import annotations

import itertools

from models.kernel.db import session
from tests.support.factories.identity import Actor, principal

_numbers = itertools.count(1)


def live_version(actor: Actor, agent_id: str) -> str:
    """The id of the agent's published version (its first, unless published since)."""
    from models.configs.tables import Agent
    with session():
        return Agent.in_workspace(actor.workspace_id, Agent.published_version_id).where(Agent.id == agent_id).scalar()


def path_to(status: str) -> list[str]:
    """The moves from queued to ``status``."""
    return {"queued": [], "ringing": ["ringing"], "in-progress": ["ringing", "in-progress"],
            "forwarding": ["ringing", "in-progress", "forwarding"], "ended": ["ended"]}[status]


def live_call(actor: Actor, agent_id: str, *, call_id: str | None = None, status: str = "queued",
              direction: str = "inbound", customer: str = "+14155550123", campaign_id: str | None = None,
              contact_id: str | None = None) -> str:
    """A call of the agent's published version registered in the actor's workspace (a new callId
    unless given; from ``customer`` to a number of the workspace when inbound, the other way round
    when outbound), moved to ``status``; its callId."""
    from models.live_calls import calls
    call_id = call_id or f"call_{next(_numbers):06d}_{actor.workspace_id[:8]}"
    ours = "+14155550100"
    with session():
        registration = calls.check_registration(
            actor.workspace_id, direction=direction, entity_type="agent", entity_id=agent_id,
            version_id=live_version(actor, agent_id), from_number=customer if direction == "inbound" else ours,
            to_number=ours if direction == "inbound" else customer, campaign_id=campaign_id, contact_id=contact_id)
        calls.register(workspace_id=actor.workspace_id, call_id=call_id, registration=registration)
        for move in path_to(status):
            calls.move(workspace_id=actor.workspace_id, call_id=call_id, status=move)
    return call_id


def control(actor: Actor, call_id: str, kind: str = "resume", request: dict | None = None) -> str:
    """A pending control request to the call (in progress); its id."""
    from models.live_calls import controls
    with session():
        return controls.request_control(principal(actor), workspace_id=actor.workspace_id, call_id=call_id,
                                        kind=kind, request=request or {}).id
