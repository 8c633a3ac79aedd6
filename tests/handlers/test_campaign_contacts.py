"""A campaign's contacts over HTTP: added by list and by CSV (bad rows reported by index or line,
the good ones added), E.164 and time zones, merges, do-not-call marking, the list's filters and
aliases, reading and removing one."""
from __future__ import annotations

from datetime import timedelta

import pytest

from models.kernel.db import utcnow
from tests.support import factories
from tests.support.client import Api

NUMBER = "+14155550123"


@pytest.fixture
def world(platform):
    owner = platform.workspace()
    api = Api(platform, owner)
    campaign_id = factories.campaign(owner)
    return api, owner, campaign_id


def add(api: Api, campaign_id: str, contacts: list, expect: int = 200):
    return api("POST", f"/campaign/{campaign_id}/contacts", expect, json={"contacts": contacts})


def listed(api: Api, campaign_id: str, **query) -> list[dict]:
    return api("GET", f"/campaign/{campaign_id}/contacts", limit=100, **query)["contacts"]


def import_csv(platform, owner, campaign_id: str, text: str, expect: int = 200):
    response = platform.client.post(f"/api/v2/campaign/{campaign_id}/contacts/import", content=text.encode(),
                                    params={"workspaceId": owner.workspace_id},
                                    headers={**owner.headers, "Content-Type": "text/csv"})
    assert response.status_code == expect, response.text
    return response.json()["data"]["result" if expect == 200 else "message"]


def test_contacts_are_added_normalised_with_their_time_zones_and_the_bad_ones_reported(world):
    api, owner, campaign_id = world
    report = add(api, campaign_id, [
        {"number": "+1 (415) 555-0123", "name": "Ada", "variables": {"plan": "gold", "day": 14, "vip": True}},
        {"number": "+33 1 42 68 53 00", "timeZone": "Europe/Paris"},
        {"number": "+1415"}, {"number": "not a number"}, {"number": "+442079460000", "timeZone": "Mars/Olympus"}])
    assert (report["added"], report["merged"], report["suppressed"]) == (2, 0, 0)
    assert [(f["index"], f["number"]) for f in report["failed"]] == [(2, "+1415"), (3, "not a number"),
                                                                     (4, "+442079460000")]
    assert "contacts[2].number" in report["failed"][0]["reason"]
    assert "contacts[4].timeZone" in report["failed"][2]["reason"]
    ada, paris = listed(api, campaign_id)
    assert ada["number"] == NUMBER and ada["name"] == "Ada" and ada["timeZone"] == "America/Los_Angeles"
    assert ada["variables"] == {"plan": "gold", "day": 14, "vip": True} and ada["state"] == "pending"
    assert ada["attempts"] == 0 and ada["alias"] is None and ada["campaignId"] == campaign_id
    assert paris["number"] == "+33142685300" and paris["timeZone"] == "Europe/Paris" and paris["variables"] == {}
    assert api("GET", f"/campaign/{campaign_id}")["campaign"]["contactCount"] == 2


def test_a_request_holds_1_to_1000_contacts_with_bounded_fields(world):
    api, owner, campaign_id = world
    add(api, campaign_id, [], 400)
    many = [{"number": f"+1415555{i:04d}"} for i in range(1000)]
    assert add(api, campaign_id, many)["added"] == 1000
    add(api, campaign_id, many + [{"number": NUMBER}], 400)
    add(api, campaign_id, [{"number": NUMBER, "name": "x" * 201}], 400)
    assert add(api, campaign_id, [{"number": "+14155551999", "name": "x" * 200}])["added"] == 1
    add(api, campaign_id, [{"number": NUMBER, "variables": {f"v{i}": i for i in range(51)}}], 400)
    assert add(api, campaign_id, [{"number": "+14155552000",
                                   "variables": {f"v{i}": i for i in range(50)}}])["added"] == 1
    add(api, campaign_id, [{"number": NUMBER, "variables": {"note": "x" * 1001}}], 400)
    add(api, campaign_id, [{"number": NUMBER, "variables": {"nested": {"a": 1}}}], 400)
    add(api, campaign_id, [{"number": NUMBER, "variables": {"none": None}}], 400)
    add(api, campaign_id, [{"number": NUMBER, "extra": 1}], 400)
    assert add(api, campaign_id, [{"number": "+14155552001", "variables": {"note": "x" * 1000}}])["added"] == 1


def test_a_number_repeated_or_already_there_is_merged_while_pending(world):
    api, owner, campaign_id = world
    report = add(api, campaign_id, [{"number": NUMBER, "name": "First", "variables": {"a": 1}},
                                    {"number": "+1 415 555 0123", "name": "Second"}])
    assert (report["added"], report["merged"]) == (1, 1)
    (contact,) = listed(api, campaign_id)
    assert contact["name"] == "Second" and contact["variables"] == {"a": 1}
    report = add(api, campaign_id, [{"number": NUMBER, "variables": {"b": 2}, "timeZone": "America/New_York"}])
    assert (report["added"], report["merged"]) == (0, 1)
    (contact,) = listed(api, campaign_id)
    assert contact["name"] == "Second" and contact["variables"] == {"b": 2}
    assert contact["timeZone"] == "America/New_York" and contact["id"] == listed(api, campaign_id)[0]["id"]
    factories.set_contact_state(owner, contact["id"], "done")
    assert add(api, campaign_id, [{"number": NUMBER, "name": "Third"}])["merged"] == 1
    (contact,) = listed(api, campaign_id)
    assert contact["name"] == "Second" and contact["state"] == "done"


def test_a_number_on_the_do_not_call_list_is_kept_marked_suppressed(world):
    api, owner, campaign_id = world
    factories.suppressed(owner, NUMBER)
    # Listed a day ago until a second ago: expired.
    factories.suppressed(owner, "+14155550124", expires_at=utcnow() - timedelta(seconds=1),
                         now=utcnow() - timedelta(days=1))
    factories.suppressed(owner, "+14155550125", expires_at=utcnow() + timedelta(days=1))
    report = add(api, campaign_id, [{"number": NUMBER}, {"number": "+14155550124"}, {"number": "+14155550125"}])
    assert (report["added"], report["suppressed"]) == (1, 2)
    states = {c["number"]: c["state"] for c in listed(api, campaign_id)}
    assert states == {NUMBER: "suppressed", "+14155550124": "pending", "+14155550125": "suppressed"}
    assert [c["number"] for c in listed(api, campaign_id, state="suppressed")] == [NUMBER, "+14155550125"]


def test_another_workspaces_do_not_call_list_and_phone_book_do_not_apply(world, platform):
    api, owner, campaign_id = world
    stranger = platform.workspace()
    factories.suppressed(stranger, NUMBER)
    factories.phone_alias(stranger, "Stranger's friend", NUMBER)
    assert add(api, campaign_id, [{"number": NUMBER}])["added"] == 1
    (contact,) = listed(api, campaign_id)
    assert contact["state"] == "pending" and contact["alias"] is None


def test_the_list_shows_aliases_and_filters_by_states_and_by_number_or_name(world):
    api, owner, campaign_id = world
    factories.phone_alias(owner, "Louvre desk", "+33142685300")
    add(api, campaign_id, [{"number": NUMBER, "name": "Ada Lovelace"}, {"number": "+33142685300"},
                           {"number": "+14155550199", "name": "Grace_Hopper"}])
    ada, louvre, grace = listed(api, campaign_id)
    assert louvre["alias"] == "Louvre desk" and ada["alias"] is None
    factories.set_contact_state(owner, grace["id"], "failed")
    assert [c["id"] for c in listed(api, campaign_id, state="pending,failed")] == [ada["id"], louvre["id"], grace["id"]]
    assert [c["id"] for c in listed(api, campaign_id, state="failed")] == [grace["id"]]
    assert listed(api, campaign_id, state="done") == []
    assert [c["id"] for c in listed(api, campaign_id, q="+1415")] == [ada["id"], grace["id"]]
    assert [c["id"] for c in listed(api, campaign_id, q="lovelace")] == [ada["id"]]
    assert [c["id"] for c in listed(api, campaign_id, q="LOUVRE")] == [louvre["id"]]
    assert [c["id"] for c in listed(api, campaign_id, q="_")] == [grace["id"]]  # no wildcard
    assert listed(api, campaign_id, q="555") == []  # a prefix of the number, not a part
    page = api("GET", f"/campaign/{campaign_id}/contacts", limit=1, offset=2)
    assert [c["id"] for c in page["contacts"]] == [grace["id"]] and page["pagination"]["total"] == 3
    api("GET", f"/campaign/{campaign_id}/contacts", 400, state="waiting")


def test_a_contact_is_read_and_removed_but_not_while_it_is_called(world, platform):
    api, owner, campaign_id = world
    add(api, campaign_id, [{"number": NUMBER}, {"number": "+14155550124"}])
    first, second = listed(api, campaign_id)
    assert api("GET", f"/campaign/{campaign_id}/contacts/{first['id']}")["contact"] == first
    factories.set_contact_state(owner, second["id"], "in_progress")
    error = api("DELETE", f"/campaign/{campaign_id}/contacts/{second['id']}", 409)
    assert "in_progress" in error["message"]
    api("DELETE", f"/campaign/{campaign_id}/contacts/{first['id']}")
    api("GET", f"/campaign/{campaign_id}/contacts/{first['id']}", 404)
    assert [c["id"] for c in listed(api, campaign_id)] == [second["id"]]
    other_campaign = factories.campaign(owner)
    api("GET", f"/campaign/{other_campaign}/contacts/{second['id']}", 404)
    other = Api(platform, platform.workspace())
    other("GET", f"/campaign/{campaign_id}/contacts", 404)
    other("GET", f"/campaign/{campaign_id}/contacts/{second['id']}", 404)
    other("DELETE", f"/campaign/{campaign_id}/contacts/{second['id']}", 404)
    other("POST", f"/campaign/{campaign_id}/contacts", 404, json={"contacts": [{"number": NUMBER}]})
    assert api("GET", f"/campaign/{campaign_id}")["campaign"]["contactCount"] == 1


@pytest.mark.parametrize("status", ["completed", "cancelled"])
def test_contacts_cannot_be_added_to_a_campaign_that_is_over(world, platform, status):
    api, owner, campaign_id = world
    over = factories.campaign(owner, numbers=[NUMBER], status=status)
    assert f"The campaign is {status}" in add(api, over, [{"number": "+14155550124"}], 409)["message"]
    assert f"The campaign is {status}" in import_csv(platform, owner, over, "number\n+14155550124\n", 409)


def test_a_csv_is_imported_with_its_bad_rows_reported_by_line(world, platform):
    api, owner, campaign_id = world
    factories.suppressed(owner, "+14155550126")
    text = ("\ufeffNumber,name,TimeZone,plan,renewal day\r\n"
            "+14155550123,Ada,,gold,14\r\n"
            "12,Bad,,,\r\n"
            "\r\n"
            "+33142685300,\"Curie, Marie\",Europe/Paris,silver,\r\n"
            "+14155550124,Short row\r\n"
            "+14155550125,\"Two\nlines\",,,\r\n"
            "+14155550126,Suppressed,,,\r\n"
            "+14155550127,Bad zone,Nowhere/City,,\r\n"
            "+1 415 555 0123,Ada again,,platinum,\r\n")
    report = import_csv(platform, owner, campaign_id, text)
    assert (report["added"], report["merged"], report["suppressed"]) == (2, 1, 1)
    assert [(f["line"], f["number"]) for f in report["failed"]] == [(3, "12"), (6, None), (7, "+14155550125"),
                                                                    (10, "+14155550127")]
    assert "line 3.number" in report["failed"][0]["reason"] and "2 cells" in report["failed"][1]["reason"]
    ada, curie, suppressed = listed(api, campaign_id)
    assert ada["name"] == "Ada again" and ada["variables"] == {"plan": "platinum"}
    assert curie["name"] == "Curie, Marie" and curie["timeZone"] == "Europe/Paris"
    assert curie["variables"] == {"plan": "silver"} and suppressed["state"] == "suppressed"


def test_a_csv_may_come_inside_json(world):
    api, owner, campaign_id = world
    result = api("POST", f"/campaign/{campaign_id}/contacts/import", json={"csv": "number,name\n+14155550123,Ada\n"})
    assert (result["added"], result["failed"]) == (1, [])
    assert listed(api, campaign_id)[0]["name"] == "Ada"


@pytest.mark.parametrize(("text", "said"), [
    ("", "empty"), ("name,plan\nAda,gold\n", "number column"), ("number\n", "no rows"),
    ("number,number\n+14155550123,+14155550124\n", "twice"), ("number,\n+14155550123,x\n", "twice"),
    ("number," + ",".join(f"v{i}" for i in range(51)) + "\n+14155550123" + "," * 51 + "\n", "more than 50"),
    ("number\n" + "".join(f"+1415{i:07d}\n" for i in range(10_001)), "more than 10000")])
def test_a_csv_that_cannot_be_read_as_a_whole_is_400(world, platform, text, said):
    api, owner, campaign_id = world
    message = import_csv(platform, owner, campaign_id, text, 400)
    assert said in message.replace(",", "")
    assert listed(api, campaign_id) == []


def test_a_csv_of_10000_rows_is_imported(world, platform):
    api, owner, campaign_id = world
    text = "number\n" + "".join(f"+1415555{i % 10000:04d}\n" for i in range(10_000))
    report = import_csv(platform, owner, campaign_id, text)
    assert (report["added"], report["failed"]) == (10_000, [])
    assert api("GET", f"/campaign/{campaign_id}")["campaign"]["contactCount"] == 10_000


def test_a_csv_that_is_not_utf8_is_400(world, platform, ):
    api, owner, campaign_id = world
    response = platform.client.post(f"/api/v2/campaign/{campaign_id}/contacts/import",
                                    content="number,name\n+14155550123,Zoë\n".encode("latin-1"),
                                    params={"workspaceId": owner.workspace_id},
                                    headers={**owner.headers, "Content-Type": "text/csv"})
    assert response.status_code == 400 and "UTF-8" in response.json()["data"]["message"]
