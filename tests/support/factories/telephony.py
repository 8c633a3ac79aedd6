"""Telephony: a workspace's phone numbers, its phone book and business-hours schedules, made through
the domain as the API makes them."""
from __future__ import annotations

from models.kernel.db import session
from tests.support.factories.identity import Actor, principal


def phone_number(actor: Actor, number: str = "+14155550123", *, label: str | None = None,
                 provider: str | None = None, inbound: bool = True, outbound: bool = True,
                 agent_id: str | None = None, workflow_id: str | None = None) -> str:
    """A phone number of the actor's workspace, answered by the agent or workflow given; its id."""
    from models.telephony import numbers
    with session():
        return numbers.create(principal(actor), workspace_id=actor.workspace_id, number=number, label_text=label,
                              provider_name=provider, inbound=inbound, outbound=outbound, inbound_agent_id=agent_id,
                              inbound_workflow_id=workflow_id).id


def phone_alias(actor: Actor, name: str, number: str = "+14155550123") -> str:
    """A phone book entry of the actor's workspace; its id."""
    from models.telephony import phone_book
    with session():
        return phone_book.create(principal(actor), workspace_id=actor.workspace_id, name=name, number=number).id


def schedule_row(actor: Actor, name: str = "Office hours", time_zone: str = "America/New_York") -> str:
    """A business-hours schedule of the actor's workspace (Monday to Friday, 9 to 17), written as a
    row: what routing needs of one, until the schedules group has a service to make it; its id."""
    from models.telephony.tables import Schedule
    hours = {day: [{"start": "09:00", "end": "17:00"}]
             for day in ("monday", "tuesday", "wednesday", "thursday", "friday")}
    with session():
        return Schedule.create(workspace=actor.workspace_id, name=name, name_key=name.lower(), time_zone=time_zone,
                               weekly_hours=hours, exceptions=[], created_by=actor.user_id).id
