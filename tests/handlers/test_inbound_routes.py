"""Inbound routing over HTTP: what answers a call to a number at a fixed moment (its schedule and
after-hours target applied, across daylight-saving changes), with the live version, and each
reason nothing can (404 / 409)."""
from __future__ import annotations

import pytest

from models.configs.tables import Agent
from models.kernel.db import session
from models.telephony.tables import PhoneNumber
from tests.support import factories
from tests.support.client import Api, api

NUMBER = "+14155550100"
EVERY_DAY_9_TO_5 = {day: [{"start": "09:00", "end": "17:00"}]
                    for day in ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")}


def resolve(api: Api, expect: int = 200, number: str = NUMBER, **query) -> dict:
    return api("GET", "/inbound-routes/resolve", expect, number=number, **query)


@pytest.fixture
def desk(platform):
    """A workspace whose number is answered by an agent within 09:00-17:00 New York time every day
    (Christmas closed), and by a workflow after hours."""
    owner = api(platform)
    actor = owner.actor
    agent_id = factories.agent(actor, name="Front desk", config={"prompt": "Welcome to the front desk."})
    factories.save_versions(actor, agent_id, 1)  # a newer version, not published: the live one answers
    workflow_id = factories.workflow(actor, [agent_id], name="Night line")
    schedule_id = factories.schedule(actor, weekly_hours=EVERY_DAY_9_TO_5,
                                     exceptions=[{"date": "2026-12-25", "name": "Christmas"}])
    factories.phone_number(actor, NUMBER, target=("agent", agent_id), schedule_id=schedule_id,
                           after_hours=("workflow", workflow_id))
    return owner, agent_id, workflow_id, schedule_id


def test_within_hours_the_agent_answers_with_its_live_version(desk):
    owner, agent_id, _, schedule_id = desk
    agent = owner("GET", f"/agents/{agent_id}")["agent"]
    route = resolve(owner, number="+1 (415) 555-0100", at="2026-11-23T15:00:00Z")  # 10:00 in New York
    assert route["number"] == NUMBER and route["withinHours"] is True and route["scheduleId"] == schedule_id
    target = route["target"]
    assert (target["type"], target["id"], target["name"]) == ("agent", agent_id, "Front desk")
    assert target["versionId"] == agent["publishedVersionId"] and target["versionNumber"] == 1
    assert target["config"]["prompt"] == "Welcome to the front desk."


def test_after_hours_the_after_hours_target_answers(desk):
    owner, _, workflow_id, _ = desk
    route = resolve(owner, at="2026-11-23T22:00:00Z")  # 17:00 in New York: closed
    assert route["withinHours"] is False
    assert (route["target"]["type"], route["target"]["id"], route["target"]["name"]) == ("workflow", workflow_id,
                                                                                         "Night line")
    assert route["target"]["config"]["nodes"][0]["type"] == "start"
    assert resolve(owner, at="2026-11-23T16:59:59-05:00")["withinHours"] is True
    assert resolve(owner, at="2026-12-25T15:00:00Z")["withinHours"] is False  # Christmas closed


@pytest.mark.parametrize("at, within", [
    # The day before the spring change, New York is UTC-5.
    ("2026-03-07T13:59:00Z", False), ("2026-03-07T14:00:00Z", True), ("2026-03-07T21:59:00Z", True),
    ("2026-03-07T22:00:00Z", False),
    # The day of the change (02:00 EST -> 03:00 EDT), UTC-4 from then on: 09:00 is 13:00Z.
    ("2026-03-08T12:59:00Z", False), ("2026-03-08T13:00:00Z", True), ("2026-03-08T20:59:00Z", True),
    ("2026-03-08T21:00:00Z", False),
    # The autumn change (02:00 EDT -> 01:00 EST): UTC-5 again by 09:00.
    ("2026-10-31T13:00:00Z", True), ("2026-11-01T13:59:00Z", False), ("2026-11-01T14:00:00Z", True),
    ("2026-11-01T21:59:00Z", True), ("2026-11-01T22:00:00Z", False),
    # The same moment written with another offset.
    ("2026-03-08T09:00:00-04:00", True), ("2026-03-08T08:00:00-05:00", True), ("2026-03-08T07:59:00-05:00", False),
])
def test_hours_follow_new_york_across_daylight_saving_changes(desk, at, within):
    owner = desk[0]
    assert resolve(owner, at=at)["withinHours"] is within


def test_a_number_without_a_schedule_is_always_answered(platform):
    owner = api(platform)
    agent_id = factories.agent(owner.actor)
    factories.phone_number(owner.actor, NUMBER, target=("agent", agent_id))
    route = resolve(owner, at="2026-12-25T03:00:00Z")
    assert route["withinHours"] is None and route["scheduleId"] is None and route["target"]["id"] == agent_id
    assert resolve(owner)["target"]["id"] == agent_id  # now, by default


def test_closed_without_an_after_hours_target_is_a_conflict(platform):
    owner = api(platform)
    agent_id = factories.agent(owner.actor)
    schedule_id = factories.schedule(owner.actor, weekly_hours=EVERY_DAY_9_TO_5)
    factories.phone_number(owner.actor, NUMBER, target=("agent", agent_id), schedule_id=schedule_id)
    assert resolve(owner, at="2026-11-23T15:00:00Z")["withinHours"] is True
    refused = resolve(owner, 409, at="2026-11-23T22:00:00Z")
    assert "closed" in refused["message"] and "no after-hours target" in refused["message"]
    assert "2026-11-23T17:00-05:00" in refused["message"]


def test_what_keeps_a_number_from_being_answered(platform):
    owner = api(platform)
    actor = owner.actor
    agent_id = factories.agent(actor, name="Unpublished")
    factories.phone_number(actor, "+14155550101", inbound=False, target=("agent", agent_id))
    factories.phone_number(actor, "+14155550102")
    factories.phone_number(actor, "+14155550103", target=("agent", agent_id))
    assert "does not take inbound calls" in resolve(owner, 409, number="+14155550101")["message"]
    assert "No agent or workflow answers +14155550102" in resolve(owner, 409, number="+14155550102")["message"]
    with session():
        Agent.update(published_version_id=None).where(Agent.id == agent_id).execute()
    assert "publish a version first" in resolve(owner, 409, number="+14155550103")["message"]
    assert "no phone number +14155550199" in resolve(owner, 404, number="+14155550199")["message"]
    assert "number" in resolve(owner, 400, number="12")["message"]
    assert "number" in resolve(owner, 400, number="4155550100")["message"]  # no country code


def test_another_workspaces_number_and_target_are_not_found(platform):
    mine, theirs = api(platform), api(platform)
    their_agent = factories.agent(theirs.actor)
    factories.phone_number(theirs.actor, NUMBER, target=("agent", their_agent))
    resolve(mine, 404)
    assert resolve(theirs)["target"]["id"] == their_agent
    # A number of mine naming another workspace's agent: that agent is none of mine. Routing refuses
    # such a target, so the number's row is made to name it, as a stale or tampered row would.
    mine_id = factories.phone_number(mine.actor, "+14155550111", target=("agent", factories.agent(mine.actor)))
    with session():
        PhoneNumber.update(inbound_target_id=their_agent).where(PhoneNumber.id == mine_id).execute()
    assert "no longer exists" in resolve(mine, 409, number="+14155550111")["message"]


@pytest.mark.parametrize("at", ["2026-11-23T15:00:00", "yesterday", "2026-13-01T00:00:00Z",
                                "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_a_moment_without_an_offset_or_out_of_range_is_refused(desk, at):
    assert "at" in resolve(desk[0], 400, at=at)["message"]


def test_the_first_moment_of_the_calendar_is_refused_where_the_zone_cannot_show_it(desk):
    assert "at" in resolve(desk[0], 400, at="0001-01-01T00:00:00Z")["message"]
