"""Campaigns: campaigns and their contacts through the domain, and the telephony rows they name
(a caller number, a schedule, a do-not-call entry, a phone-book alias) written as rows, since the
telephony operations are a group of their own."""
from __future__ import annotations

import itertools

from models.kernel.db import session
from tests.support.factories.identity import Actor, principal

_numbers = itertools.count(100)


def caller_number(actor: Actor, *, outbound: bool = True, number: str | None = None) -> str:
    """A phone number of the actor's workspace (a new one each time: they are unique across the
    service); its id."""
    from models.telephony.tables import PhoneNumber
    with session():
        return PhoneNumber.create(workspace=actor.workspace_id, number=number or f"+1415555{next(_numbers):04d}",
                                  inbound=True, outbound=outbound, created_by=actor.user_id).id


def schedule_row(actor: Actor, name: str = "Office hours", time_zone: str = "Europe/Paris") -> str:
    """A business-hours schedule of the actor's workspace, weekdays 09:00-17:00; its id."""
    from models.telephony.tables import Schedule
    hours = {day: [{"start": "09:00", "end": "17:00"}] for day in ("monday", "tuesday", "wednesday", "thursday",
                                                                   "friday")}
    with session():
        return Schedule.create(workspace=actor.workspace_id, name=name, name_key=name.lower(), time_zone=time_zone,
                               weekly_hours=hours, exceptions=[], created_by=actor.user_id).id


def suppress_number(actor: Actor, number: str, *, expires_at=None) -> None:
    """``number`` on the actor's workspace's do-not-call list."""
    from models.telephony.tables import SuppressedNumber
    with session():
        SuppressedNumber.create(workspace=actor.workspace_id, number=number, source="manual",
                                added_by=actor.user_id, expires_at=expires_at)


def alias_number(actor: Actor, number: str, name: str) -> None:
    """``name`` for ``number`` in the actor's workspace's phone book."""
    from models.telephony.tables import PhoneAlias
    with session():
        PhoneAlias.create(workspace=actor.workspace_id, number=number, name=name, name_key=name.lower(),
                          created_by=actor.user_id)


def campaign(actor: Actor, *, agent_id: str | None = None, workflow_id: str | None = None, name: str = "campaign",
             caller_number_id: str | None = None, numbers: list[str] = (), status: str | None = None,
             **fields) -> str:
    """A campaign of the actor's workspace (a new agent and caller number unless given), with
    contacts of ``numbers``, moved to ``status`` through the legal moves; its id."""
    from models.campaigns import campaigns, contacts
    from tests.support.factories.configs import agent
    if agent_id is None and workflow_id is None:
        agent_id = agent(actor, name=f"{name} agent")
    caller_number_id = caller_number_id or caller_number(actor)
    with session():
        record = campaigns.create(principal(actor), workspace_id=actor.workspace_id, name=name,
                                  agent_id=agent_id, workflow_id=workflow_id, caller_number_id=caller_number_id,
                                  **fields)
        if numbers:
            contacts.add(workspace_id=actor.workspace_id, campaign_id=record.id,
                         contacts=[{"number": n} for n in numbers])
        for step in _path_to(status):
            campaigns.move(workspace_id=actor.workspace_id, campaign_id=record.id, status=step)
    return record.id


def _path_to(status: str | None) -> list[str]:
    """The moves from draft to ``status`` (starting ones need contacts)."""
    return {None: [], "draft": [], "scheduled": ["scheduled"], "running": ["running"], "paused": ["running", "paused"],
            "completed": ["running", "completed"], "cancelled": ["cancelled"]}[status]


def set_contact_state(actor: Actor, contact_id: str, state: str) -> None:
    """A contact put in ``state`` as execution would (claimed, called, settled)."""
    from models.campaigns.tables import CampaignContact
    with session():
        CampaignContact.update(state=state).where(CampaignContact.id == contact_id).execute()
