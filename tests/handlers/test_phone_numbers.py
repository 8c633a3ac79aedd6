"""Phone numbers over HTTP: E.164 normalisation, the bounds of each field, uniqueness across the
service (409 saying whose), another workspace's ids (404), deletion refused while a campaign calls
from the number, inbound routing under its own permission, and the CSV import's rows reported by
line and reason."""
from __future__ import annotations

import pytest

from models.campaigns.tables import Campaign
from models.identity.principal import Principal
from models.kernel.db import session
from models.kernel.errors import Conflict
from models.telephony import numbers
from tests.support import factories
from tests.support.client import Api, owner
from tests.support.threads import run_threads

NUMBER = "+14155550123"


def add(api: Api, expect: int = 200, **body) -> dict:
    body.setdefault("number", NUMBER)
    result = api("POST", "/phone-numbers", expect, json=body)
    return result["phoneNumber"] if expect == 200 else result


def send_csv(api: Api, text: str | bytes, content_type: str = "text/csv", **params):
    content = text.encode() if isinstance(text, str) else text
    return api.client.request("POST", "/api/v2/phone-numbers/import", content=content,
                              headers={**api.actor.headers, "Content-Type": content_type},
                              params={"workspaceId": api.actor.workspace_id, **params})


def import_csv(api: Api, text: str | bytes, expect: int = 200, **params) -> dict:
    response = send_csv(api, text, **params)
    assert response.status_code == expect, response.text
    return response.json()["data"]["result"] if expect == 200 else response.json()["data"]


def test_a_number_is_added_normalised_then_read_listed_updated_and_deleted(platform):
    api = owner(platform)
    made = add(api, number="+1 (415) 555-0123", label="  Support line ", provider="twilio")
    assert made["number"] == NUMBER and made["label"] == "Support line" and made["provider"] == "twilio"
    assert made["capabilities"] == {"inbound": True, "outbound": True}
    assert made["routing"] == {"agentId": None, "workflowId": None, "scheduleId": None,
                               "afterHours": {"agentId": None, "workflowId": None}}
    assert api("GET", f"/phone-numbers/{made['id']}")["phoneNumber"] == made
    listed = api("GET", "/phone-numbers")
    assert listed["phoneNumbers"] == [made] and listed["pagination"] == {"total": 1, "limit": 20, "offset": 0}
    updated = api("PATCH", f"/phone-numbers/{made['id']}",
                  json={"label": None, "provider": " ", "capabilities": {"outbound": False}})["phoneNumber"]
    assert updated["label"] is None and updated["provider"] is None
    assert updated["capabilities"] == {"inbound": True, "outbound": False}
    assert updated["number"] == NUMBER and updated["updatedAt"] >= made["updatedAt"]
    assert api("DELETE", f"/phone-numbers/{made['id']}") == {"id": made["id"], "deleted": True}
    api("GET", f"/phone-numbers/{made['id']}", 404)
    api("DELETE", f"/phone-numbers/{made['id']}", 404)


def test_a_national_number_needs_its_region(platform):
    api = owner(platform)
    assert "E.164" in add(api, 400, number="(415) 555-0123")["message"]
    assert add(api, number="(415) 555-0123", region="us")["number"] == NUMBER
    assert add(api, number="020 7183 8750", region="GB")["number"] == "+442071838750"
    assert "region must be the ISO 3166 code" in add(api, 400, number="020 7183 8751", region="ZZ")["message"]
    assert add(api, 400, number="020 7183 8751", region="GBR")["message"].startswith("Invalid value for region")


@pytest.mark.parametrize("number, reason", [("+1415", "not a valid phone number"), ("hello", "not a phone number"),
                                            ("", "Invalid value for number"), ("+" + "1" * 64, "number")])
def test_a_bad_number_is_400_naming_the_field(platform, number, reason):
    data = add(owner(platform), 400, number=number)
    assert reason in data["message"] and "number" in data["message"]


def test_the_label_and_provider_are_bounded(platform):
    api = owner(platform)
    assert add(api, label="L" * 100, provider="p" * 50)["label"] == "L" * 100
    assert "label" in add(api, 400, number="+14155550124", label="L" * 101)["message"]
    assert "provider" in add(api, 400, number="+14155550124", provider="p" * 51)["message"]
    assert "label" in add(api, 400, number="+14155550124", label="a\nb")["message"]
    made = add(api, number="+14155550124", label="   ")
    assert made["label"] is None
    number_id = made["id"]
    api("PATCH", f"/phone-numbers/{number_id}", 400, json={"label": "L" * 101})
    api("PATCH", f"/phone-numbers/{number_id}", 400, json={})
    api("PATCH", f"/phone-numbers/{number_id}", 400, json={"number": "+14155550125"})  # the number is fixed
    api("PATCH", f"/phone-numbers/{number_id}", 400, json={"capabilities": {"inbound": "yes"}})


def test_a_number_belongs_to_one_workspace_across_the_service(platform):
    api, other = owner(platform), owner(platform)
    mine = add(api)
    data = add(api, 409, number="+1 415-555-0123")
    assert data["code"] == "conflict" and f"in this workspace already ({mine['id']})" in data["message"]
    data = add(other, 409)
    assert "belongs to another workspace" in data["message"] and mine["id"] not in data["message"]
    api("DELETE", f"/phone-numbers/{mine['id']}")
    assert add(other)["number"] == NUMBER  # free again once deleted


def test_another_workspaces_number_is_not_found(platform):
    api, other = owner(platform), owner(platform)
    theirs = add(other)["id"]
    api("GET", f"/phone-numbers/{theirs}", 404)
    api("PATCH", f"/phone-numbers/{theirs}", 404, json={"label": "mine"})
    api("PUT", f"/phone-numbers/{theirs}/routing", 404, json={})
    api("DELETE", f"/phone-numbers/{theirs}", 404)
    assert api("GET", "/phone-numbers")["phoneNumbers"] == []
    assert other("GET", f"/phone-numbers/{theirs}")["phoneNumber"]["label"] is None


def test_a_number_a_campaign_calls_from_cannot_be_deleted(platform):
    api = owner(platform)
    agent_id = factories.agent(api.actor)
    number = add(api)
    with session():
        campaign = Campaign.create(workspace=api.actor.workspace_id, name="Renewals", status="draft",
                                   target_type="agent", target_id=agent_id, caller_number=number["id"],
                                   max_concurrent_calls=1, max_attempts=1, retry_delay_s=60,
                                   created_by=api.actor.user_id)
    data = api("DELETE", f"/phone-numbers/{number['id']}", 409)
    assert data["message"].startswith(f"A campaign calls from the number {NUMBER}")
    # Outbound off is allowed meanwhile: the campaign checks its number when it claims work.
    api("PATCH", f"/phone-numbers/{number['id']}", json={"capabilities": {"outbound": False}})
    assert api("GET", f"/phone-numbers/{number['id']}")["phoneNumber"]["number"] == NUMBER
    with session():
        Campaign.delete().where(Campaign.id == campaign.id).execute()
    api("DELETE", f"/phone-numbers/{number['id']}")


def test_the_list_searches_by_number_prefix_or_label_and_filters_by_capability(platform):
    api = owner(platform)
    sf = add(api, number="+14155550123", label="SF support")["id"]
    ny = add(api, number="+12125550123", label="New York sales", capabilities={"inbound": False})["id"]
    london = add(api, number="+442071838750", label="London_100%", capabilities={"outbound": False})["id"]

    def ids(**params):
        return [n["id"] for n in api("GET", "/phone-numbers", **params)["phoneNumbers"]]

    assert ids() == [sf, ny, london]  # oldest first
    assert ids(q="+1 415") == [sf] and ids(q="+1") == [sf, ny] and ids(q="+44") == [london]
    assert ids(q="SALES") == [ny] and ids(q="support") == [sf] and ids(q="_100%") == [london]
    assert ids(q="%") == [london] and ids(q="_") == [london]  # wildcards are literal
    assert ids(q="( )") == []  # separators alone are no prefix of every number
    assert ids(capability="inbound") == [sf, london] and ids(capability="outbound") == [sf, ny]
    assert ids(q="+1", capability="inbound") == [sf]
    page = api("GET", "/phone-numbers", limit=1, offset=1)
    assert [n["id"] for n in page["phoneNumbers"]] == [ny] and page["pagination"]["total"] == 3
    api("GET", "/phone-numbers", 400, capability="sms")
    api("GET", "/phone-numbers", 400, q="x" * 101)


# --- inbound routing ----------------------------------------------------------------------------

def test_routing_names_a_target_a_schedule_and_an_after_hours_target(platform):
    api = owner(platform)
    agent_id, other_agent = factories.agent(api.actor), factories.agent(api.actor, name="night")
    workflow_id = factories.workflow(api.actor, [agent_id])
    schedule_id = factories.schedule(api.actor)
    number = add(api, inboundAgentId=agent_id)
    assert number["routing"]["agentId"] == agent_id
    path = f"/phone-numbers/{number['id']}/routing"
    routed = api("PUT", path, json={"workflowId": workflow_id, "scheduleId": schedule_id,
                                    "afterHoursAgentId": other_agent})["phoneNumber"]
    assert routed["routing"] == {"agentId": None, "workflowId": workflow_id, "scheduleId": schedule_id,
                                 "afterHours": {"agentId": other_agent, "workflowId": None}}
    assert api("GET", f"/phone-numbers/{number['id']}")["phoneNumber"]["routing"] == routed["routing"]
    cleared = api("PUT", path, json={"agentId": None})["phoneNumber"]
    assert cleared["routing"] == {"agentId": None, "workflowId": None, "scheduleId": None,
                                  "afterHours": {"agentId": None, "workflowId": None}}


def test_routing_refuses_two_targets_foreign_ids_and_after_hours_without_hours(platform):
    api, other = owner(platform), owner(platform)
    agent_id, workflow_id = factories.agent(api.actor), factories.workflow(api.actor)
    foreign_agent, foreign_schedule = factories.agent(other.actor), factories.schedule(other.actor)
    path = f"/phone-numbers/{add(api)['id']}/routing"
    assert "give one of them" in api("PUT", path, 400, json={"agentId": agent_id, "workflowId": workflow_id})["message"]
    assert api("PUT", path, 400, json={"agentId": foreign_agent})["message"] == \
        f"agentId: no agent {foreign_agent} in this workspace."
    assert api("PUT", path, 400, json={"workflowId": agent_id})["message"].startswith("workflowId: no workflow")
    assert api("PUT", path, 400, json={"agentId": agent_id, "scheduleId": foreign_schedule})["message"] == \
        f"scheduleId: no schedule {foreign_schedule} in this workspace."
    assert "need a scheduleId" in api("PUT", path, 400, json={"afterHoursAgentId": agent_id})["message"]
    data = api("PUT", path, 400, json={"scheduleId": factories.schedule(api.actor), "afterHoursAgentId": agent_id,
                                       "afterHoursWorkflowId": workflow_id})
    assert "afterHoursAgentId and afterHoursWorkflowId" in data["message"]
    assert "inboundAgentId" in add(api, 400, number="+14155550124", inboundAgentId=foreign_agent)["message"]
    api("PUT", path, 400, json={"agentId": "not-a-uuid"})
    api("PUT", path, 400, json={"routing": {}})


def test_routing_needs_inbound_write_beyond_phone_numbers_write(platform):
    api = owner(platform)
    agent_id = factories.agent(api.actor)
    limited = Api(platform, factories.api_key(api.actor, permissions=["phone-numbers:write", "phone-numbers:read"]))
    number = add(limited)
    api_path = f"/phone-numbers/{number['id']}/routing"
    limited("PUT", api_path, 403, json={"agentId": agent_id})
    assert "inbound:write" in add(limited, 403, number="+14155550124", inboundAgentId=agent_id)["message"]
    router = Api(platform, factories.api_key(api.actor, permissions=["inbound:write"]))
    assert router("PUT", api_path, json={"agentId": agent_id})["phoneNumber"]["routing"]["agentId"] == agent_id
    router("PATCH", f"/phone-numbers/{number['id']}", 403, json={"label": "x"})


def test_an_agent_or_workflow_a_number_routes_to_cannot_be_deleted(platform):
    api = owner(platform)
    agent_id, night = factories.agent(api.actor), factories.agent(api.actor, name="night")
    number = add(api, inboundAgentId=agent_id)
    data = api("DELETE", f"/agents/{agent_id}", 409)
    assert f"the phone number {NUMBER} ({number['id']})" in data["message"]
    api("PUT", f"/phone-numbers/{number['id']}/routing",
        json={"scheduleId": factories.schedule(api.actor), "afterHoursAgentId": night})
    api("DELETE", f"/agents/{agent_id}")  # no longer routed to
    assert f"the phone number {NUMBER}" in api("DELETE", f"/agents/{night}", 409)["message"]
    workflow_id = factories.workflow(api.actor)
    api("PUT", f"/phone-numbers/{number['id']}/routing", json={"workflowId": workflow_id})
    assert f"the phone number {NUMBER}" in api("DELETE", f"/workflows/{workflow_id}", 409)["message"]
    api("DELETE", f"/agents/{night}")


def test_of_workspaces_adding_one_number_at_once_one_gets_it(platform):
    actors = [platform.workspace() for _ in range(4)]

    def create(index: int):
        actor = actors[index]
        with session():
            try:
                return numbers.create(Principal(credential_id="c", kind="access_token", user_id=actor.user_id,
                                                workspace_id=actor.workspace_id, permissions=frozenset()),
                                      workspace_id=actor.workspace_id, number=NUMBER).workspace_id
            except Conflict as exc:
                return exc.message

    results = run_threads(4, create)
    owners = [r for r in results if r in {a.workspace_id for a in actors}]
    assert len(owners) == 1, results
    assert sorted(r for r in results if r not in owners) == [
        f"The number {NUMBER} belongs to another workspace; a number belongs to one workspace across the service."] * 3


# --- the CSV import -----------------------------------------------------------------------------

def test_good_rows_are_imported_and_each_bad_one_reported_by_line_and_reason(platform):
    api = owner(platform)
    text = ("\ufeffnumber,label,provider,inbound,outbound\n"  # a spreadsheet's byte-order mark
            "+1 415 555 0123,Support,twilio,yes,no\n"  # line 2
            "+1415,Bad,,,\n"  # 3: no numbering plan has it
            "\n"  # 4: blank, skipped
            "+14155550123,Again,,,\n"  # 5: a repeat of line 2
            "+14155550124,,,maybe,\n"  # 6: a bad boolean
            '+14155550125,"Two, words",telnyx,0,TRUE\n'  # 7
            "+14155550126,x,y,1,1,extra\n"  # 8: a cell too many
            f"+14155550127,{'L' * 101},,,\n"  # 9: label too long
            "+14155550128")  # 10: no line break at the end, the other columns empty
    result = import_csv(api, text)
    assert result["imported"] == 3
    assert [(n["line"], n["number"]) for n in result["numbers"]] == [(2, NUMBER), (7, "+14155550125"),
                                                                     (10, "+14155550128")]
    failed = {f["line"]: f for f in result["failed"]}
    assert sorted(failed) == [3, 5, 6, 8, 9]
    assert failed[3]["number"] == "+1415" and "not a valid phone number" in failed[3]["reason"]
    assert failed[5]["reason"] == f"{NUMBER} is on line 2 already."
    assert failed[6]["reason"] == "inbound must be true, false, yes, no, 1 or 0, not 'maybe'."
    assert "1 cell(s) more" in failed[8]["reason"]
    assert "label must be at most 100 characters" in failed[9]["reason"]
    listed = {n["number"]: n for n in api("GET", "/phone-numbers")["phoneNumbers"]}
    assert set(listed) == {NUMBER, "+14155550125", "+14155550128"}
    assert listed[NUMBER]["label"] == "Support" and listed[NUMBER]["provider"] == "twilio"
    assert listed[NUMBER]["capabilities"] == {"inbound": True, "outbound": False}
    assert listed["+14155550125"]["label"] == "Two, words"
    assert listed["+14155550125"]["capabilities"] == {"inbound": False, "outbound": True}
    assert listed["+14155550128"]["capabilities"] == {"inbound": True, "outbound": True}
    assert listed["+14155550128"]["label"] is None


def test_a_second_import_reports_what_this_or_another_workspace_holds(platform):
    api, other = owner(platform), owner(platform)
    add(other, number="+14155550124")
    first = import_csv(api, "number\n+14155550123\n+14155550124\n")
    assert first["imported"] == 1
    assert first["failed"] == [{"line": 3, "number": "+14155550124",
                                "reason": "+14155550124 belongs to another workspace."}]
    again = import_csv(api, "Number \r\n(415) 555-0123\r\n", region="US")  # header case and spaces read away
    mine = first["numbers"][0]["id"]
    assert again == {"imported": 0, "numbers": [], "failed": [
        {"line": 2, "number": NUMBER, "reason": f"{NUMBER} is in this workspace already ({mine})."}]}
    assert api("GET", "/phone-numbers")["pagination"]["total"] == 1


def test_a_national_number_in_a_file_needs_the_region(platform):
    api = owner(platform)
    result = import_csv(api, "number\n(415) 555-0123\n")
    assert result["imported"] == 0 and "E.164" in result["failed"][0]["reason"]
    assert import_csv(api, "number\n(415) 555-0123\n", region="US")["imported"] == 1
    assert "region" in import_csv(api, "number\n+14155550124\n", 400, region="ZZ")["message"]


@pytest.mark.parametrize("text, reason", [
    ("", "must be a CSV file"),
    ("\n\n", "first line must name the columns"),
    ("label,provider\nSupport,twilio\n", "no number column"),
    ("number,colour\n+14155550123,red\n", "unknown columns: colour"),
    ("number,label,number\n+14155550123,a,b\n", "names a column twice"),
    ('number,label\n+14155550123,"unclosed\n', "cannot be read at line"),
    ("number\n+14155550123\x00\n", "must not contain a NUL"),
])
def test_a_file_that_cannot_be_read_is_400_and_imports_nothing(platform, text, reason):
    api = owner(platform)
    assert reason in import_csv(api, text, 400)["message"]
    assert api("GET", "/phone-numbers")["phoneNumbers"] == []


def test_a_body_not_utf8_or_not_csv_is_refused(platform):
    api = owner(platform)
    assert "not valid UTF-8" in import_csv(api, "number,label\n+14155550123,Caf\xe9\n".encode("latin-1"),
                                           400)["message"]
    for content_type in ("application/json", "text/plain", "application/octet-stream"):
        response = send_csv(api, "number\n+14155550123\n", content_type)
        assert response.status_code == 415 and "text/csv" in response.json()["data"]["message"], content_type
    response = send_csv(api, "number\n+14155550123\n", "text/csv; charset=latin-1")
    assert response.status_code == 415 and "latin-1" in response.json()["data"]["message"]
    response = send_csv(api, "number\n+14155550123\n", 'text/csv; charset="utf-8"')
    assert response.status_code == 200 and response.json()["data"]["result"]["imported"] == 1


def test_a_control_character_in_a_cell_fails_its_row(platform):
    result = import_csv(owner(platform), "number,label\n+14155550123,a\x07b\n+14155550124,ok\n")
    assert result["imported"] == 1
    assert result["failed"][0]["line"] == 2 and "control character (U+0007" in result["failed"][0]["reason"]


def test_a_file_holds_at_most_10000_rows(platform):
    api = owner(platform)
    rows = "\n".join([NUMBER] * 10_000)
    result = import_csv(api, f"number\n{rows}\n")
    assert result["imported"] == 1 and len(result["failed"]) == 9_999
    assert result["failed"][-1] == {"line": 10_001, "number": NUMBER, "reason": f"{NUMBER} is on line 2 already."}
    assert "more than 10000 rows" in import_csv(api, f"number\n{rows}\n{NUMBER}\n", 400)["message"]


def test_the_import_needs_its_permission(platform):
    api = owner(platform)
    writer = Api(platform, factories.api_key(api.actor, permissions=["phone-numbers:write"]))
    assert send_csv(writer, "number\n+14155550123\n").status_code == 403
    importer = Api(platform, factories.api_key(api.actor, permissions=["phone-numbers:import"]))
    assert import_csv(importer, "number\n+14155550123\n")["imported"] == 1
