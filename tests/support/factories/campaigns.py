"""Campaigns: campaigns and their contacts made through the domain, and for execution's tests a
campaign and contacts written as rows (in states the domain does not make: see each one), a
claimed attempt, a contact's state set as execution would."""
from __future__ import annotations

import itertools
import uuid
from datetime import datetime, timedelta

from models.kernel.db import session, utcnow
from tests.support.factories.configs import agent
from tests.support.factories.identity import Actor, principal
from tests.support.factories.telephony import phone_number

_claimed = itertools.count(1)


def campaign(actor: Actor, *, agent_id: str | None = None, workflow_id: str | None = None, name: str = "campaign",
             caller_number_id: str | None = None, numbers: list[str] = (), status: str | None = None,
             **fields) -> str:
    """A campaign of the actor's workspace (a new agent and caller number unless given), with
    contacts of ``numbers``, moved to ``status`` through the legal moves; its id."""
    from models.campaigns import campaigns, contacts
    if agent_id is None and workflow_id is None:
        agent_id = agent(actor, name=f"{name} agent")
    caller_number_id = caller_number_id or phone_number(actor)
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


def campaign_row(actor: Actor, *, status: str = "running", agent_id: str | None = None,
                 max_concurrent_calls: int = 10, max_attempts: int = 3, retry_delay_s: int = 600,
                 starts_at: datetime | None = None, ends_at: datetime | None = None,
                 calling_hours: dict | None = None, schedule_id: str | None = None,
                 caller_number_id: str | None = None, name: str = "campaign") -> str:
    """A campaign of the actor's workspace calling for an agent (a new one unless given) from a
    caller number (a new one unless given), written as a row in ``status``; its id.

    A row, because execution's tests need what the domain refuses: a running (or scheduled,
    completed...) campaign with no contacts yet, whose contacts come after (contact_rows); a
    window (``starts_at``/``ends_at``) on the tests' fixed past clock; and, unless told, no calling
    hours at all (the domain always sets some), so that claims hand out at any hour of the clock."""
    from models.campaigns.tables import Campaign
    agent_id = agent_id or agent(actor, name=f"{name} agent")
    caller_number_id = caller_number_id or phone_number(actor)
    with session():
        return Campaign.create(workspace=actor.workspace_id, name=name, status=status, target_type="agent",
                               target_id=agent_id, caller_number=caller_number_id, schedule=schedule_id,
                               calling_hours=calling_hours, starts_at=starts_at, ends_at=ends_at,
                               max_concurrent_calls=max_concurrent_calls, max_attempts=max_attempts,
                               retry_delay_s=retry_delay_s, created_by=actor.user_id).id


def contact_rows(actor: Actor, campaign_id: str, numbers: list[str], time_zone: str = "America/New_York",
                 due_at: datetime | None = None, variables: dict | None = None) -> list[str]:
    """Pending contacts of the campaign, one per number (all in ``time_zone``, due at ``due_at``,
    by default a minute ago), written as rows; their ids, in the order of ``numbers``.

    Rows, because execution's tests queue contacts on campaigns the domain takes none on (completed,
    cancelled), due at a time of their fixed clock, and pending whatever the do-not-call list says
    (a number listed after it was queued must still be caught when it is claimed)."""
    from models.campaigns.tables import CampaignContact
    due_at = due_at or utcnow() - timedelta(minutes=1)
    rows = [{"id": str(uuid.uuid4()), "workspace": actor.workspace_id, "campaign": campaign_id, "number": number,
             "name": f"Contact {i}", "time_zone": time_zone, "variables": variables or {"index": i}, "state": "pending",
             "attempts": 0, "next_attempt_at": due_at} for i, number in enumerate(numbers)]
    with session():
        for batch in range(0, len(rows), 500):
            CampaignContact.insert_many(rows[batch:batch + 500]).execute()
    return [row["id"] for row in rows]


def numbers(count: int, start: int = 0, prefix: str = "+1212555") -> list[str]:
    """``count`` distinct E.164 numbers."""
    return [f"{prefix}{start + i:04d}" for i in range(count)]


def claimed_attempt(actor: Actor, campaign_id: str | None = None) -> tuple[str, str, str]:
    """A running campaign (a campaign_row unless given) with one more contact, claimed:
    (campaign id, contact id, attempt id)."""
    from models.campaigns import dialing
    campaign_id = campaign_id or campaign_row(actor)
    contact_id = contact_rows(actor, campaign_id, numbers(1, next(_claimed) % 10_000, prefix="+1646555"))[0]
    with session():
        claimed = dialing.claim(workspace_id=actor.workspace_id, campaign_id=campaign_id, count=1)
    assert [c.contact_id for c in claimed.claims] == [contact_id], claimed
    return campaign_id, contact_id, claimed.claims[0].attempt_id


def set_contact_state(actor: Actor, contact_id: str, state: str) -> None:
    """A contact put in ``state`` as execution would (claimed, called, settled)."""
    from models.campaigns.tables import CampaignContact
    with session():
        CampaignContact.update(state=state).where(CampaignContact.id == contact_id).execute()
