"""Campaign execution: a campaign of an agent with its caller number, its contacts and do-not-call
entries, inserted as rows (the tables' own defaults), so that claims have something to take."""
from __future__ import annotations

import itertools
import uuid
from datetime import datetime, timedelta

from models.kernel.db import session, utcnow
from tests.support.factories.configs import agent as make_agent
from tests.support.factories.identity import Actor

_numbers = itertools.count(1)


def phone_number(actor: Actor, number: str | None = None) -> str:
    """An outbound number of the actor's workspace; its id."""
    from models.telephony.tables import PhoneNumber
    number = number or f"+1415{uuid.uuid4().int % 10_000_000:07d}"
    with session():
        return PhoneNumber.create(workspace=actor.workspace_id, number=number, inbound=True, outbound=True,
                                  created_by=actor.user_id).id


def schedule(actor: Actor, time_zone: str, weekly_hours: dict, exceptions: list | None = None) -> str:
    from models.telephony.tables import Schedule
    name = f"schedule {uuid.uuid4().hex[:8]}"
    with session():
        return Schedule.create(workspace=actor.workspace_id, name=name, name_key=name, time_zone=time_zone,
                               weekly_hours=weekly_hours, exceptions=exceptions or [],
                               created_by=actor.user_id).id


def campaign(actor: Actor, *, status: str = "running", agent_id: str | None = None, max_concurrent_calls: int = 10,
             max_attempts: int = 3, retry_delay_s: int = 600, starts_at: datetime | None = None,
             ends_at: datetime | None = None, calling_hours: dict | None = None, schedule_id: str | None = None,
             name: str = "campaign") -> str:
    """A campaign of the actor's workspace calling for an agent (a new one unless ``agent_id``)
    from a new number of its own; its id."""
    from models.campaigns.tables import Campaign
    agent_id = agent_id or make_agent(actor, name=f"{name} agent")
    caller = phone_number(actor)
    with session():
        return Campaign.create(workspace=actor.workspace_id, name=name, status=status, target_type="agent",
                               target_id=agent_id, caller_number=caller, schedule=schedule_id,
                               calling_hours=calling_hours, starts_at=starts_at, ends_at=ends_at,
                               max_concurrent_calls=max_concurrent_calls, max_attempts=max_attempts,
                               retry_delay_s=retry_delay_s, created_by=actor.user_id).id


def contacts(actor: Actor, campaign_id: str, numbers: list[str], time_zone: str = "America/New_York",
             due_at: datetime | None = None, variables: dict | None = None) -> list[str]:
    """Pending contacts of the campaign, one per number (all in ``time_zone``, due at ``due_at``,
    by default a minute ago); their ids, in the order of ``numbers``."""
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


def suppress(actor: Actor, number: str, expires_at: datetime | None = None, source: str = "manual") -> str:
    """The number put on the actor's workspace's do-not-call list; the entry's id."""
    from models.telephony.tables import SuppressedNumber
    with session():
        return SuppressedNumber.create(workspace=actor.workspace_id, number=number, source=source,
                                       added_by=actor.user_id, expires_at=expires_at).id


def alias(actor: Actor, number: str, name: str) -> str:
    from models.telephony.tables import PhoneAlias
    with session():
        return PhoneAlias.create(workspace=actor.workspace_id, name=name, name_key=name.lower(), number=number,
                                 created_by=actor.user_id).id


def claimed_attempt(actor: Actor, campaign_id: str | None = None) -> tuple[str, str, str]:
    """A running campaign with one contact, claimed: (campaign id, contact id, attempt id)."""
    from models.campaigns import dialing
    campaign_id = campaign_id or campaign(actor)
    contact_id = contacts(actor, campaign_id, [f"+1646555{next(_numbers) % 10_000:04d}"])[0]
    with session():
        claimed = dialing.claim(workspace_id=actor.workspace_id, campaign_id=campaign_id, count=1)
    assert [c.contact_id for c in claimed.claims] == [contact_id], claimed
    return campaign_id, contact_id, claimed.claims[0].attempt_id
