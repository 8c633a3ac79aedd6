"""Workspace credits over HTTP: owners grant, calls are debited from their reports, all can be read."""
from __future__ import annotations

from datetime import datetime, timedelta

from tests.support import factories

API = "/api/v2"


def _params(actor, **more):
    return {"workspaceId": actor.workspace_id, **more}


def test_grants_and_call_debits_make_the_balance(platform):
    owner = platform.workspace()
    r = platform.client.post(API + "/workspace/credits/grants", params=_params(owner), headers=owner.headers,
                             json={"credits": 100, "description": "top-up"})
    assert r.status_code == 200 and r.json()["data"]["result"]["balance"] == 100
    for duration_ms in (61_000, 60_000, 0):
        report = factories.report(owner, durationMs=duration_ms)
        for _ in range(2):  # a redelivery debits nothing more
            assert platform.client.post(API + "/webhooks/end-of-call-report", params=_params(owner), headers=owner.headers,
                                        json=report).status_code == 200
    balance = platform.client.get(API + "/workspace/credits", params=_params(owner), headers=owner.headers)
    assert balance.json()["data"]["result"] == {"workspaceId": owner.workspace_id, "balance": 97, "enforced": False}
    entries = platform.client.get(API + "/workspace/credits/entries", params=_params(owner, kind="call"),
                                  headers=owner.headers).json()["data"]["result"]
    assert [(e["amount"], e["quantity"], e["unit"]) for e in entries["entries"]] == [(-1, 1, "minutes"), (-2, 2, "minutes")]
    assert entries["pagination"]["total"] == 2


def test_only_owners_grant_and_viewers_cannot_read(platform):
    owner = platform.workspace()
    admin = platform.member(owner, "admin")
    r = platform.client.post(API + "/workspace/credits/grants", params=_params(admin), headers=admin.headers,
                             json={"credits": 1})
    assert r.status_code == 403 and "billing:manage" in r.json()["data"]["message"]
    assert platform.client.get(API + "/workspace/credits", params=_params(admin), headers=admin.headers).status_code == 200
    for credits_ in (0, 1_000_000_001):
        r = platform.client.post(API + "/workspace/credits/grants", params=_params(owner), headers=owner.headers,
                                 json={"credits": credits_})
        assert r.status_code == 400 and "credits" in r.json()["data"]["message"]
    r = platform.client.get(API + "/workspace/credits/entries", params=_params(owner, since="yesterday"),
                            headers=owner.headers)
    assert r.status_code == 400 and "since" in r.json()["data"]["message"]


def test_a_call_is_debited_at_most_its_longest_duration_and_a_longer_report_debits_nothing(platform):
    owner = platform.workspace()
    day = 86_400_000

    def report(duration_ms, span_ms):
        body = factories.report(owner, durationMs=duration_ms)
        body["endedAt"] = (datetime.fromisoformat(body["startedAt"]) + timedelta(milliseconds=span_ms)).isoformat()
        return platform.client.post(API + "/webhooks/end-of-call-report", params=_params(owner),
                                    headers=owner.headers, json=body).status_code

    century = 100 * 365.25 * day
    # durationMs left out is the span; the contract's own maximum of durationMs is far above a day.
    assert [report(None, century), report(999_999_999_999, day), report(day + 1, day)] == [400, 400, 400]
    assert [report(day, day), report(day, day)] == [200, 200]
    balance = platform.client.get(API + "/workspace/credits", params=_params(owner), headers=owner.headers)
    assert balance.json()["data"]["result"]["balance"] == -2 * 24 * 60
