"""Campaign execution over HTTP: claims with their bounds, outcomes, renewals, a contact resolved by
hand, progress, the end-of-call-report settling a campaign contact, and another workspace's ids.
The rules of what is due (window, hours, zones, the do-not-call list, concurrency) are
tests/models/test_dialing.py's, on a fixed clock."""
from __future__ import annotations

import uuid

import pytest

from tests.support import factories
from tests.support.client import Api
from tests.support.reports import post_report


@pytest.fixture
def api(platform) -> Api:
    return Api(platform, platform.workspace())


def campaign_with(api: Api, count: int, **options) -> tuple[str, list[str]]:
    campaign_id = factories.campaign_row(api.actor, **options)
    return campaign_id, factories.contact_rows(api.actor, campaign_id, factories.numbers(count))


def claims(api: Api, campaign_id: str, expect: int = 200, **body):
    return api("POST", f"/campaign/{campaign_id}/claims", expect, json=body)


def test_claims_hand_out_due_contacts_with_what_to_dial(api):
    campaign_id, ids = campaign_with(api, 3)
    got = claims(api, campaign_id, count=2, leaseSeconds=30)
    assert len(got["claims"]) == 2 and {c["contactId"] for c in got["claims"]} < set(ids)
    claim = got["claims"][0]
    assert claim["attempt"] == 1 and claim["number"].startswith("+1212555") and claim["timeZone"] == "America/New_York"
    assert claim["leaseUntil"].endswith("Z") and claim["variables"].keys() == {"index"}
    assert got["campaign"]["status"] == "running" and got["campaign"]["callerNumber"].startswith("+")
    assert got["campaign"]["target"]["type"] == "agent" and got["campaign"]["target"]["versionId"]
    assert len(claims(api, campaign_id)["claims"]) == 1  # default count 1
    assert claims(api, campaign_id, count=100, leaseSeconds=3600)["claims"] == []


@pytest.mark.parametrize("body", [{"count": 0}, {"count": 101}, {"leaseSeconds": 29}, {"leaseSeconds": 3601},
                                  {"count": "1"}, {"other": 1}])
def test_a_claim_out_of_bounds_is_refused_naming_the_field(api, body):
    campaign_id, _ = campaign_with(api, 1)
    data = claims(api, campaign_id, 400, **body)
    assert next(iter(body)) in data["message"]


def test_outcomes_settle_the_attempt_once(api):
    campaign_id, _ = campaign_with(api, 2, retry_delay_s=60)
    first, second = claims(api, campaign_id, count=2)["claims"]
    path = f"/campaign/{campaign_id}/attempts/{first['attemptId']}/outcome"
    call_id = str(uuid.uuid4())
    contact = api("POST", path, json={"outcome": "no-answer", "callId": call_id})["contact"]
    assert (contact["state"], contact["attempts"], contact["lastOutcome"], contact["lastCallId"]) == \
        ("pending", 1, "no-answer", call_id)
    assert api("POST", path, json={"outcome": "no-answer"})["contact"] == contact  # a retried request
    assert "settled already" in api("POST", path, 409, json={"outcome": "answered"})["message"]
    assert api("POST", path, 400, json={"outcome": "hung-up"})["code"] == "validation_failed"
    done = api("POST", f"/campaign/{campaign_id}/attempts/{second['attemptId']}/outcome",
               json={"outcome": "do-not-call"})["contact"]
    assert done["state"] == "done"
    api("POST", f"/campaign/{campaign_id}/attempts/{uuid.uuid4()}/outcome", 404, json={"outcome": "answered"})


def test_a_lease_is_renewed_and_a_contact_resolved_by_hand(api):
    campaign_id, _ = campaign_with(api, 1)
    claim = claims(api, campaign_id, leaseSeconds=30)["claims"][0]
    renewed = api("POST", f"/campaign/{campaign_id}/attempts/{claim['attemptId']}/renew", json={"leaseSeconds": 600})
    assert renewed["attemptId"] == claim["attemptId"] and renewed["leaseUntil"] > claim["leaseUntil"]
    api("POST", f"/campaign/{campaign_id}/attempts/{claim['attemptId']}/renew", 400, json={"leaseSeconds": 3601})
    resolved = api("POST", f"/campaign/{campaign_id}/contacts/{claim['contactId']}/resolve",
                   json={"state": "failed", "note": "Wrong person"})["contact"]
    assert (resolved["state"], resolved["lastOutcome"]) == ("failed", "resolved-by-hand")
    assert "resolved-by-hand" in api("POST", f"/campaign/{campaign_id}/attempts/{claim['attemptId']}/renew",
                                     409, json={})["message"]
    api("POST", f"/campaign/{campaign_id}/attempts/{claim['attemptId']}/outcome", 409, json={"outcome": "answered"})
    api("POST", f"/campaign/{campaign_id}/contacts/{claim['contactId']}/resolve", 400, json={"state": "pending"})
    progress = api("GET", f"/campaign/{campaign_id}/progress")
    assert progress["status"] == "completed" and progress["contacts"]["failed"] == 1


def test_progress_counts_contacts_and_attempts(api):
    campaign_id, ids = campaign_with(api, 4)
    factories.suppressed(api.actor, factories.numbers(4)[3])
    empty = api("GET", f"/campaign/{campaign_id}/progress")
    assert empty["contacts"] == {"pending": 4, "inProgress": 0, "done": 0, "failed": 0, "suppressed": 0, "total": 4}
    assert empty["answerRate"] is None and empty["attempts"] == {"total": 0, "open": 0, "byOutcome": {}}
    taken = claims(api, campaign_id, count=4)["claims"]
    assert len(taken) == 3
    api("POST", f"/campaign/{campaign_id}/attempts/{taken[0]['attemptId']}/outcome", json={"outcome": "answered"})
    api("POST", f"/campaign/{campaign_id}/attempts/{taken[1]['attemptId']}/outcome", json={"outcome": "busy"})
    got = api("GET", f"/campaign/{campaign_id}/progress")
    assert got["contacts"] == {"pending": 1, "inProgress": 1, "done": 1, "failed": 0, "suppressed": 1, "total": 4}
    assert got["attempts"] == {"total": 3, "open": 1, "byOutcome": {"answered": 1, "busy": 1}}
    assert got["answerRate"] == 0.5 and got["status"] == "running"


def test_a_campaign_calls_report_settles_its_contact(platform, api):
    campaign_id, ids = campaign_with(api, 2)
    first, second = claims(api, campaign_id, count=2)["claims"]
    body = factories.report(api.actor, campaignId=campaign_id, contactId=first["contactId"],
                            attemptId=first["attemptId"], endedReason="customer-busy", callType="outbound")
    assert post_report(platform, api.actor, body)["result"]["ingestWarnings"] == []
    progress = api("GET", f"/campaign/{campaign_id}/progress")
    assert progress["attempts"]["byOutcome"] == {"busy": 1} and progress["contacts"]["pending"] == 1
    stranger = Api(platform, platform.workspace("stranger"))
    other = factories.report(stranger.actor, campaignId=campaign_id, contactId=second["contactId"])
    warnings = post_report(platform, stranger.actor, other)["result"]["ingestWarnings"]
    assert len(warnings) == 1 and "settled no campaign contact" in warnings[0]
    assert api("GET", f"/campaign/{campaign_id}/progress")["contacts"]["inProgress"] == 1
    bad = factories.report(api.actor, campaignId="not-a-uuid", contactId=second["contactId"])
    assert "campaignId" in post_report(platform, api.actor, bad, 400)["message"]


def test_another_workspaces_campaign_attempt_or_contact_is_not_found(platform, api):
    campaign_id, ids = campaign_with(api, 1)
    claim = claims(api, campaign_id)["claims"][0]
    stranger = Api(platform, platform.workspace("stranger"))
    claims(stranger, campaign_id, 404)
    stranger("GET", f"/campaign/{campaign_id}/progress", 404)
    stranger("POST", f"/campaign/{campaign_id}/attempts/{claim['attemptId']}/outcome", 404, json={"outcome": "answered"})
    stranger("POST", f"/campaign/{campaign_id}/attempts/{claim['attemptId']}/renew", 404, json={})
    stranger("POST", f"/campaign/{campaign_id}/contacts/{ids[0]}/resolve", 404, json={"state": "done"})
    own = factories.campaign_row(stranger.actor)
    stranger("POST", f"/campaign/{own}/attempts/{claim['attemptId']}/outcome", 404, json={"outcome": "answered"})
    stranger("POST", f"/campaign/{own}/contacts/{ids[0]}/resolve", 404, json={"state": "done"})
    assert api("GET", f"/campaign/{campaign_id}/progress")["contacts"]["inProgress"] == 1


def test_claims_need_campaign_execute(platform, api):
    campaign_id, _ = campaign_with(api, 1)
    reader = Api(platform, factories.api_key(api.actor, permissions=["campaign:read"]))
    claims(reader, campaign_id, 403)
    assert reader("GET", f"/campaign/{campaign_id}/progress")["contacts"]["pending"] == 1
