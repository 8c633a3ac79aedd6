"""Business-hours schedules over HTTP: the rules of names, zones, windows and exceptions at their
bounds, openNow, updates, and deletion (refused while a campaign uses the schedule; a phone number
using it loses it)."""
from __future__ import annotations

import pytest

from models.campaigns.tables import Campaign
from models.kernel.db import session
from models.telephony.tables import PhoneNumber
from tests.support import factories
from tests.support.client import Api, api

NINE_TO_FIVE = [{"start": "09:00", "end": "17:00"}]
ALWAYS = {day: [{"start": "00:00", "end": "24:00"}]
          for day in ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")}


def create(api: Api, expect: int = 200, **body) -> dict:
    body = {"name": "Support hours", "timeZone": "America/New_York", "weeklyHours": {"monday": NINE_TO_FIVE}, **body}
    result = api("POST", "/schedules", expect, json=body)
    return result["schedule"] if expect == 200 else result


def test_a_schedule_is_created_read_listed_updated_and_deleted(platform):
    owner = api(platform)
    made = create(owner, exceptions=[{"date": "2026-12-25", "name": "Christmas"}])
    assert made["name"] == "Support hours" and made["timeZone"] == "America/New_York"
    assert made["weeklyHours"]["monday"] == NINE_TO_FIVE and made["weeklyHours"]["sunday"] == []
    assert made["exceptions"] == [{"date": "2026-12-25", "name": "Christmas", "hours": []}]
    assert isinstance(made["openNow"], bool) and made["createdBy"] == owner.actor.user_id
    read = owner("GET", f"/schedules/{made['id']}")["schedule"]
    assert read == made
    assert owner("GET", "/schedules")["schedules"] == [read]
    updated = owner("PATCH", f"/schedules/{made['id']}", json={"name": "  Winter hours ", "weeklyHours": ALWAYS})["schedule"]
    assert updated["name"] == "Winter hours" and updated["openNow"] is True
    assert updated["exceptions"] == made["exceptions"] and updated["timeZone"] == "America/New_York"
    closed = owner("PATCH", f"/schedules/{made['id']}", json={"weeklyHours": {}})["schedule"]
    assert closed["openNow"] is False
    assert owner("DELETE", f"/schedules/{made['id']}") == {"id": made["id"], "deleted": True}
    owner("GET", f"/schedules/{made['id']}", 404)
    owner("PATCH", f"/schedules/{made['id']}", 404, json={"name": "x"})
    owner("DELETE", f"/schedules/{made['id']}", 404)


def test_names_are_1_to_100_characters_and_unique_without_case(platform):
    owner = api(platform)
    create(owner, 400, name="")
    assert "name" in create(owner, 400, name="   ")["message"]
    create(owner, 400, name="x" * 101)
    create(owner, name="x")
    create(owner, name="y" * 100)
    first = create(owner, name="Front Desk")
    assert "'front desk'" in create(owner, 409, name=" front desk ")["message"]
    assert "already has a schedule named" in create(owner, 409, name="FRONT DESK")["message"]
    other = create(owner, name="Other")
    assert "already has a schedule named" in owner("PATCH", f"/schedules/{other['id']}", 409,
                                                   json={"name": "front desk"})["message"]
    # Its own name in another case is no conflict.
    assert owner("PATCH", f"/schedules/{first['id']}", json={"name": "FRONT desk"})["schedule"]["name"] == "FRONT desk"
    # Names are per workspace.
    create(api(platform), name="Front Desk")


@pytest.mark.parametrize("zone, status", [("Europe/London", 200), ("UTC", 200), ("America/Argentina/Buenos_Aires", 200),
                                          ("Mars/Olympus", 400), ("europe/london ", 400), ("../etc/passwd", 400),
                                          ("", 400), ("x" * 65, 400)])
def test_the_time_zone_is_an_iana_one(platform, zone, status):
    owner = api(platform)
    answer = create(owner, status, timeZone=zone)
    if status == 400:
        assert "timeZone" in answer["message"]


@pytest.mark.parametrize("hours, status", [
    ({"monday": [{"start": "00:00", "end": "24:00"}]}, 200),
    ({"monday": [{"start": "22:00", "end": "24:00"}], "tuesday": [{"start": "00:00", "end": "02:00"}]}, 200),
    ({"monday": [{"start": "09:00", "end": "12:00"}, {"start": "12:00", "end": "17:00"}]}, 200),  # touching
    ({"monday": [{"start": "09:00", "end": "12:01"}, {"start": "12:00", "end": "17:00"}]}, 400),  # overlapping
    ({"monday": [{"start": "09:00", "end": "09:00"}]}, 400),  # empty
    ({"monday": [{"start": "17:00", "end": "09:00"}]}, 400),  # backwards: no window crosses midnight
    ({"monday": [{"start": "22:00", "end": "24:01"}]}, 400),
    ({"monday": [{"start": "24:00", "end": "24:00"}]}, 400),
    ({"monday": [{"start": "9:00", "end": "17:00"}]}, 400),
    ({"monday": [{"start": "09:00"}]}, 400),
    ({"funday": NINE_TO_FIVE}, 400),
    ({"monday": [{"start": f"{h:02d}:00", "end": f"{h:02d}:30"} for h in range(8)]}, 200),
    ({"monday": [{"start": f"{h:02d}:00", "end": f"{h:02d}:30"} for h in range(9)]}, 400),
    ({}, 200),
])
def test_windows_are_checked(platform, hours, status):
    create(api(platform), status, weeklyHours=hours)


def test_exceptions_are_checked(platform):
    owner = api(platform)
    create(owner, 400, exceptions=[{"date": "2026-12-25"}, {"date": "2026-12-25", "name": "again"}])
    create(owner, 400, exceptions=[{"date": "2026-02-30"}])
    create(owner, 400, exceptions=[{"date": "2026-12-24", "hours": [{"start": "13:00", "end": "12:00"}]}])
    create(owner, 400, exceptions=[{"date": "2026-12-24", "name": "x" * 101}])
    many = [{"date": f"2027-{1 + i // 28:02d}-{1 + i % 28:02d}"} for i in range(336)] + \
        [{"date": f"2028-01-{1 + i:02d}"} for i in range(30)]
    assert len(create(owner, exceptions=many)["exceptions"]) == 366
    create(owner, 400, name="more", exceptions=many + [{"date": "2029-01-01"}])
    sorted_back = create(owner, name="sorted", exceptions=[{"date": "2026-12-31"}, {"date": "2026-01-01"}])
    assert [e["date"] for e in sorted_back["exceptions"]] == ["2026-01-01", "2026-12-31"]


def test_another_workspaces_schedule_is_not_found(platform):
    mine, theirs = api(platform), api(platform)
    schedule_id = create(theirs)["id"]
    mine("GET", f"/schedules/{schedule_id}", 404)
    mine("PATCH", f"/schedules/{schedule_id}", 404, json={"name": "mine now"})
    mine("DELETE", f"/schedules/{schedule_id}", 404)
    assert mine("GET", "/schedules")["schedules"] == []
    assert theirs("GET", f"/schedules/{schedule_id}")["schedule"]["name"] == "Support hours"


def test_a_schedule_a_campaign_uses_cannot_go_and_a_number_using_one_loses_it(platform):
    owner = api(platform)
    actor = owner.actor
    schedule_id = factories.schedule(actor)
    agent_id = factories.agent(actor)
    number_id = factories.phone_number(actor, "+14155550100", target=("agent", agent_id),
                                       schedule_id=schedule_id, after_hours=("agent", agent_id))
    campaign_id = factories.campaign(actor, agent_id=agent_id, caller_number_id=number_id, schedule_id=schedule_id,
                                     name="Renewals")
    refused = owner("DELETE", f"/schedules/{schedule_id}", 409)
    assert "used by a campaign" in refused["message"]
    assert owner("GET", f"/schedules/{schedule_id}")["schedule"]["id"] == schedule_id
    with session():
        Campaign.delete().where(Campaign.id == campaign_id).execute()
    owner("DELETE", f"/schedules/{schedule_id}")
    with session():
        number = PhoneNumber.get_by_id(number_id)
    assert number.schedule_id is None and number.after_hours_target_id == agent_id
