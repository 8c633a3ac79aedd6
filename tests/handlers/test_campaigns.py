"""Campaigns over HTTP: creation and its every bound, the list and its filters, PATCH exactly as
documented (name only), every status move legal and illegal, deletion, and the agent a live
campaign calls with kept from deletion."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from models.campaigns.lifecycle import MOVES, STATUSES
from tests.support import factories
from tests.support.client import Api

ONLY_NAME = "name is the only field that can be changed"

CALLER = "+14155550100"  # the world's caller number


def future(days: int = 1) -> str:
    return (datetime.now(timezone.utc) + timedelta(days=days)).isoformat()


@pytest.fixture
def world(platform):
    owner = platform.workspace()
    api = Api(platform, owner)
    agent, number = factories.agent(owner), factories.phone_number(owner, CALLER)
    return api, owner, agent, number


def create(api: Api, agent: str, number: str, expect: int = 200, **fields):
    body = {"name": "Spring renewals", "agentId": agent, "callerNumberId": number, **fields}
    result = api("POST", "/campaign", expect, json=body)
    return result["campaign"] if expect == 200 else result


def test_a_campaign_is_created_in_draft_with_the_defaults_then_read_listed_and_deleted(world):
    api, owner, agent, number = world
    campaign = create(api, agent, number)
    assert campaign["status"] == "draft" and campaign["agentId"] == agent and campaign["workflowId"] is None
    assert campaign["callerNumberId"] == number and campaign["callerNumber"] == CALLER
    assert campaign["callingHours"] == {"days": ["monday", "tuesday", "wednesday", "thursday", "friday"],
                                        "start": "09:00", "end": "20:00"}
    assert (campaign["maxConcurrentCalls"], campaign["maxAttempts"], campaign["retryDelaySeconds"]) == (1, 3, 3600)
    assert campaign["contactCount"] == 0 and campaign["scheduleId"] is None and campaign["startsAt"] is None
    assert api("GET", f"/campaign/{campaign['id']}")["campaign"] == campaign
    assert api("GET", "/campaign")["campaigns"] == [campaign]
    api("DELETE", f"/campaign/{campaign['id']}")
    api("GET", f"/campaign/{campaign['id']}", 404)
    api("DELETE", f"/campaign/{campaign['id']}", 404)


def test_every_field_is_kept_as_given(world):
    api, owner, agent, number = world
    schedule = factories.schedule(owner)
    workflow = factories.workflow(owner, [agent])
    body = {"name": "Spring", "workflowId": workflow, "callerNumberId": number, "scheduleId": schedule,
            "startsAt": "2030-01-01T09:00:00+01:00", "endsAt": "2030-01-31T18:00:00-05:00",
            "maxConcurrentCalls": 7, "maxAttempts": 5, "retryDelaySeconds": 900}
    campaign = api("POST", "/campaign", json=body)["campaign"]
    assert campaign["workflowId"] == workflow and campaign["agentId"] is None
    assert campaign["scheduleId"] == schedule and campaign["callingHours"] is None
    assert campaign["startsAt"] == "2030-01-01T08:00:00.000Z" and campaign["endsAt"] == "2030-01-31T23:00:00.000Z"
    assert (campaign["maxConcurrentCalls"], campaign["maxAttempts"], campaign["retryDelaySeconds"]) == (7, 5, 900)
    hours = {"days": ["friday", "monday"], "start": "10:00", "end": "18:30"}
    made = create(api, agent, number, callingHours=hours)
    assert made["callingHours"] == {"days": ["monday", "friday"], "start": "10:00", "end": "18:30"}


@pytest.mark.parametrize(("name", "expect", "stored"), [
    ("", 400, None), ("a", 200, "a"), ("x" * 100, 200, "x" * 100), ("x" * 101, 400, None), ("   ", 400, None),
    ("  Spring  sale ", 200, "Spring  sale"), ("tab\there", 400, None), ("é" * 100, 200, "é" * 100)])
def test_the_name_is_1_to_100_characters_not_only_spaces_on_create_and_on_patch(world, name, expect, stored):
    api, owner, agent, number = world
    made = create(api, agent, number, expect, name=name)
    campaign = create(api, agent, number, name="before")
    renamed = api("PATCH", f"/campaign/{campaign['id']}", expect, json={"name": name})
    if expect == 200:
        assert made["name"] == stored
        assert set(renamed["campaign"]) == {"id", "name", "updatedAt"}
        assert renamed["campaign"]["id"] == campaign["id"] and renamed["campaign"]["name"] == stored
        assert renamed["campaign"]["updatedAt"] >= campaign["updatedAt"]
        assert api("GET", f"/campaign/{campaign['id']}")["campaign"]["name"] == stored
    else:
        assert "name" in made["message"] and "name" in renamed["message"]
        assert api("GET", f"/campaign/{campaign['id']}")["campaign"]["name"] == "before"


@pytest.mark.parametrize("body", [
    {"name": "new", "status": "running"}, {"name": "new", "maxAttempts": 5}, {"status": "running"},
    {"name": "new", "agentId": "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f"}, {"name": "new", "": 1}])
def test_patch_refuses_every_field_but_name_saying_so(world, body):
    api, owner, agent, number = world
    campaign = create(api, agent, number, name="before", maxAttempts=3)
    error = api("PATCH", f"/campaign/{campaign['id']}", 400, json=body)
    assert ONLY_NAME in error["message"]
    after = api("GET", f"/campaign/{campaign['id']}")["campaign"]
    assert after == campaign


def test_patch_needs_a_name_and_cannot_reach_another_workspace(world, platform):
    api, owner, agent, number = world
    campaign = create(api, agent, number)
    assert "name" in api("PATCH", f"/campaign/{campaign['id']}", 400, json={})["message"]
    other = Api(platform, platform.workspace())
    other("PATCH", f"/campaign/{campaign['id']}", 404, json={"name": "stolen"})
    other("GET", f"/campaign/{campaign['id']}", 404)
    other("DELETE", f"/campaign/{campaign['id']}", 404)
    other("POST", f"/campaign/{campaign['id']}/status", 404, json={"status": "cancelled"})
    other("PATCH", "/campaign/9f0a1b2c-3d4e-4f5a-8b6c-7d8e9f0a1b2c", 404, json={"name": "nobody's"})
    assert api("GET", f"/campaign/{campaign['id']}")["campaign"]["name"] == "Spring renewals"


@pytest.mark.parametrize(("field", "low", "high"), [
    ("maxConcurrentCalls", 1, 100), ("maxAttempts", 1, 10), ("retryDelaySeconds", 60, 604800)])
def test_numbers_are_bounded_at_each_end(world, field, low, high):
    api, owner, agent, number = world
    for value in (low - 1, high + 1):
        assert field in create(api, agent, number, 400, **{field: value})["message"]
    for value in (low, high):
        assert create(api, agent, number, **{field: value})[field] == value


def test_who_calls_must_be_one_agent_or_one_workflow_of_the_workspace(world, platform):
    api, owner, agent, number = world
    workflow = factories.workflow(owner, [agent])
    assert "not both" in api("POST", "/campaign", 400, json={"name": "c", "agentId": agent, "workflowId": workflow,
                                                             "callerNumberId": number})["message"]
    assert "agentId or workflowId" in api("POST", "/campaign", 400,
                                          json={"name": "c", "callerNumberId": number})["message"]
    stranger = platform.workspace()
    foreign_agent = factories.agent(stranger)
    assert "agentId" in create(api, foreign_agent, number, 400)["message"]
    foreign_workflow = factories.workflow(stranger, [foreign_agent])
    assert "workflowId" in api("POST", "/campaign", 400, json={"name": "c", "workflowId": foreign_workflow,
                                                               "callerNumberId": number})["message"]


def test_the_caller_number_must_be_the_workspaces_and_outbound(world, platform):
    api, owner, agent, number = world
    inbound_only = factories.phone_number(owner, outbound=False)
    error = create(api, agent, inbound_only, 409)
    assert "callerNumberId" in error["message"] and "outbound" in error["message"] and inbound_only in error["message"]
    foreign = factories.phone_number(platform.workspace())
    assert "callerNumberId" in create(api, agent, foreign, 400)["message"]


def test_when_it_calls_is_a_schedule_or_hours_not_both(world, platform):
    api, owner, agent, number = world
    schedule = factories.schedule(owner)
    hours = {"days": ["monday"], "start": "09:00", "end": "17:00"}
    assert "not both" in create(api, agent, number, 400, scheduleId=schedule, callingHours=hours)["message"]
    foreign = factories.schedule(platform.workspace())
    assert "scheduleId" in create(api, agent, number, 400, scheduleId=foreign)["message"]
    for bad in ({**hours, "days": []}, {**hours, "days": ["monday"] * 2}, {**hours, "days": ["someday"]},
                {**hours, "days": ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
                                   "monday"]},
                {**hours, "start": "17:00", "end": "09:00"}, {**hours, "start": "09:00", "end": "09:00"},
                {**hours, "start": "9:00"}, {**hours, "end": "24:01"}, {"days": ["monday"], "start": "09:00"}):
        assert "callingHours" in create(api, agent, number, 400, callingHours=bad)["message"], bad
    every_day = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
    assert create(api, agent, number, callingHours={**hours, "days": every_day, "end": "24:00"})["callingHours"][
        "days"] == every_day


def test_starts_and_ends_carry_an_offset_and_end_after_the_start_in_the_future(world):
    api, owner, agent, number = world
    assert "endsAt" in create(api, agent, number, 400, startsAt=future(2), endsAt=future(1))["message"]
    assert "endsAt" in create(api, agent, number, 400, endsAt="2020-01-01T00:00:00Z")["message"]
    assert "startsAt" in create(api, agent, number, 400, startsAt="2030-01-01T09:00:00")["message"]
    assert create(api, agent, number, startsAt="2020-01-01T00:00:00Z", endsAt=future())["status"] == "draft"


def test_the_list_filters_by_statuses_and_name_newest_first(world):
    api, owner, agent, number = world
    first = create(api, agent, number, name="Spring renewals")
    second = create(api, agent, number, name="Winter WINBACK")
    third = create(api, agent, number, name="Summer")
    api("POST", f"/campaign/{third['id']}/status", json={"status": "cancelled"})
    assert [c["id"] for c in api("GET", "/campaign")["campaigns"]] == [third["id"], second["id"], first["id"]]
    assert [c["id"] for c in api("GET", "/campaign", status="cancelled")["campaigns"]] == [third["id"]]
    assert [c["id"] for c in api("GET", "/campaign", status="draft,cancelled")["campaigns"]] == \
        [third["id"], second["id"], first["id"]]
    assert api("GET", "/campaign", status="running")["campaigns"] == []
    assert [c["id"] for c in api("GET", "/campaign", q="winback")["campaigns"]] == [second["id"]]
    assert [c["id"] for c in api("GET", "/campaign", q="R", status="draft")["campaigns"]] == [second["id"], first["id"]]
    assert api("GET", "/campaign", q="%")["campaigns"] == []
    page = api("GET", "/campaign", limit=1, offset=1)
    assert [c["id"] for c in page["campaigns"]] == [second["id"]] and page["pagination"] == {
        "total": 3, "limit": 1, "offset": 1}
    for bad in ("drafts", "draft,", "draft,,running", "DRAFT"):
        api("GET", "/campaign", 400, status=bad)


# --- status moves ---------------------------------------------------------------------------------

def in_status(owner, agent, number, status: str) -> str:
    return factories.campaign(owner, agent_id=agent, caller_number_id=number, numbers=["+14155550123"],
                              status=status, starts_at=future())


@pytest.mark.parametrize("current", STATUSES)
@pytest.mark.parametrize("wanted", STATUSES)
def test_every_move_of_the_matrix_is_legal_or_409_naming_the_status_and_the_moves(world, current, wanted):
    api, owner, agent, number = world
    campaign_id = in_status(owner, agent, number, current)
    if wanted in MOVES[current]:
        moved = api("POST", f"/campaign/{campaign_id}/status", json={"status": wanted})["campaign"]
        assert moved["status"] == wanted
        assert (moved["completedAt"] is not None) == (wanted == "completed")
    else:
        error = api("POST", f"/campaign/{campaign_id}/status", 409, json={"status": wanted})
        assert error["code"] == "conflict" and f"The campaign is {current};" in error["message"]
        for allowed in MOVES[current]:
            assert allowed in error["message"]
        assert api("GET", f"/campaign/{campaign_id}")["campaign"]["status"] == current


def test_the_running_campaign_names_its_moves_in_one_sentence(world):
    api, owner, agent, number = world
    campaign_id = in_status(owner, agent, number, "running")
    error = api("POST", f"/campaign/{campaign_id}/status", 409, json={"status": "draft"})
    assert error["message"] == "The campaign is running; it can move to paused, cancelled or completed."
    error = api("POST", f"/campaign/{in_status(owner, agent, number, 'completed')}/status", 409,
                json={"status": "running"})
    assert error["message"] == "The campaign is completed; it cannot change status any more."


def test_a_campaign_starts_only_with_contacts_a_published_version_a_start_to_wait_for_and_an_end_ahead(world):
    from models.configs.tables import Agent
    from models.kernel.db import session
    api, owner, agent, number = world
    empty = create(api, agent, number, startsAt=future())
    for status in ("running", "scheduled"):
        assert "no contacts" in api("POST", f"/campaign/{empty['id']}/status", 409, json={"status": status})["message"]
    unscheduled = factories.campaign(owner, agent_id=agent, caller_number_id=number, numbers=["+14155550123"])
    assert "startsAt" in api("POST", f"/campaign/{unscheduled}/status", 409, json={"status": "scheduled"})["message"]
    assert api("POST", f"/campaign/{unscheduled}/status", json={"status": "running"})["campaign"]["status"] == "running"
    unpublished = factories.agent(owner, name="draft agent")
    with session():
        Agent.update(published_version_id=None).where(Agent.id == unpublished).execute()
    waiting = factories.campaign(owner, agent_id=unpublished, caller_number_id=number, numbers=["+14155550123"])
    error = api("POST", f"/campaign/{waiting}/status", 409, json={"status": "running"})
    assert "published" in error["message"] and unpublished in error["message"]
    assert api("POST", f"/campaign/{waiting}/status", json={"status": "cancelled"})["campaign"]["status"] == "cancelled"


def test_a_status_outside_the_list_is_400(world):
    api, owner, agent, number = world
    campaign = create(api, agent, number)
    for bad in ("started", "", "RUNNING"):
        api("POST", f"/campaign/{campaign['id']}/status", 400, json={"status": bad})
    api("POST", f"/campaign/{campaign['id']}/status", 400, json={"status": "cancelled", "reason": "x"})


# --- deletion -------------------------------------------------------------------------------------

@pytest.mark.parametrize("status", STATUSES)
def test_a_campaign_is_deleted_with_its_contacts_unless_it_is_running(world, status):
    api, owner, agent, number = world
    campaign_id = in_status(owner, agent, number, status)
    if status == "running":
        error = api("DELETE", f"/campaign/{campaign_id}", 409)
        assert error["message"] == "The campaign is running; pause or cancel it before deleting it."
        assert api("GET", f"/campaign/{campaign_id}")["campaign"]["contactCount"] == 1
    else:
        api("DELETE", f"/campaign/{campaign_id}")
        api("GET", f"/campaign/{campaign_id}/contacts", 404)


@pytest.mark.parametrize("status", STATUSES)
def test_an_agent_a_live_campaign_calls_with_cannot_be_deleted(world, status):
    api, owner, agent, number = world
    campaign_id = in_status(owner, agent, number, status)
    if status in ("completed", "cancelled"):
        api("DELETE", f"/agents/{agent}")
        return
    error = api("DELETE", f"/agents/{agent}", 409)
    assert f"the campaign 'campaign' ({campaign_id})" in error["message"]
    api("GET", f"/agents/{agent}")


def test_a_workflow_a_live_campaign_calls_with_cannot_be_deleted_until_the_campaign_is_over(world):
    api, owner, agent, number = world
    workflow = factories.workflow(owner, [agent])
    campaign_id = factories.campaign(owner, workflow_id=workflow, caller_number_id=number, name="Spring")
    assert f"the campaign 'Spring' ({campaign_id})" in api("DELETE", f"/workflows/{workflow}", 409)["message"]
    api("POST", f"/campaign/{campaign_id}/status", json={"status": "cancelled"})
    api("DELETE", f"/workflows/{workflow}")
