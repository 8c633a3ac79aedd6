"""Call detail records over HTTP: each column against values worked out by hand (billed minutes at
the rounding boundary, the cost the ledger debited, direction, disposition, the numbers on each
side, masked without calls:pii), both formats, the filters, a stable order across read batches,
imported calls, another workspace's calls, and the permission."""
from __future__ import annotations

import csv
import io
import uuid
from datetime import datetime, timedelta

import orjson
import pytest

from models.billing.cdr import COLUMNS, disposition
from models.billing.tables import CreditEntry
from models.kernel.db import session
from tests.support import factories
from tests.support.client import owner
from tests.support.reports import post_report

MASKED = "+*******0123"
# A price other than one credit a minute, so that the cost is not the billed minutes by chance.
PRICED = {"credits_per_call_minute": 3}


def records(platform, actor, expect: int = 200, **params) -> list[dict]:
    """The records as NDJSON rows; with ``format=csv``, as the CSV's rows (every cell a string)."""
    response = platform.client.get("/api/v2/call/cdr", headers=actor.headers,
                                   params={"workspaceId": actor.workspace_id, **params})
    assert response.status_code == expect, response.text
    if expect != 200:
        return response.json()["data"]
    if params.get("format") == "ndjson":
        assert response.headers["content-type"] == "application/x-ndjson"
        return [orjson.loads(line) for line in response.text.splitlines()]
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    assert response.text.splitlines()[0] == ",".join(COLUMNS)
    return list(csv.DictReader(io.StringIO(response.text)))


def report(actor, started: str, duration_ms: float, **fields) -> dict:
    """A report of a call started at ``started`` (on 2026-10-01, UTC) lasting ``duration_ms``."""
    start = datetime.fromisoformat(f"2026-10-01T{started}")
    end = start + timedelta(milliseconds=duration_ms)
    return factories.report(actor, startedAt=start.isoformat() + "Z", endedAt=end.isoformat(timespec="milliseconds")
                            + "Z", durationMs=duration_ms, **fields)


@pytest.mark.parametrize("settings_overrides", [PRICED])
def test_each_record_holds_the_values_worked_out_by_hand(platform):
    api = owner(platform)
    agent = api.create()
    sent = [
        # Exactly one minute is one; a millisecond more is two (each started minute).
        report(api.actor, "09:00:00", 60_000, agentId=agent["id"], answeredAt="2026-10-01T11:00:02+02:00"),
        report(api.actor, "09:05:00", 60_001, callType="outbound", phoneNumber="+14155550100",
               endedReason="customer-busy", campaignId=str(uuid.uuid4())),
        report(api.actor, "09:10:00", 0, callType="web", endedReason="pipeline-error-openai",
               callEndReasonCategory="error"),
        report(api.actor, "09:15:00", 1, callType=None, endedReason=None, callEndReasonCategory=None, customer=None),
    ]
    for body in sent:
        post_report(platform, api.actor, body)
    rows = records(platform, api.actor, format="ndjson")
    assert rows == [
        {"callId": sent[0]["callId"], "startedAt": "2026-10-01T09:00:00.000Z", "answeredAt": "2026-10-01T09:00:02.000Z",
         "endedAt": "2026-10-01T09:01:00.000Z", "durationSeconds": 60.0, "billedMinutes": 1,
         "fromNumber": "+14155550123", "toNumber": None, "direction": "inbound", "disposition": "completed",
         "cost": 3, "agentId": agent["id"], "campaignId": None},
        {"callId": sent[1]["callId"], "startedAt": "2026-10-01T09:05:00.000Z", "answeredAt": None,
         "endedAt": "2026-10-01T09:06:00.001Z", "durationSeconds": 60.001, "billedMinutes": 2,
         "fromNumber": "+14155550100", "toNumber": "+14155550123", "direction": "outbound", "disposition": "busy",
         "cost": 6, "agentId": None, "campaignId": sent[1]["campaignId"]},
        {"callId": sent[2]["callId"], "startedAt": "2026-10-01T09:10:00.000Z", "answeredAt": None,
         "endedAt": "2026-10-01T09:10:00.000Z", "durationSeconds": 0.0, "billedMinutes": 0,
         "fromNumber": "+14155550123", "toNumber": None, "direction": "web", "disposition": "failed",
         "cost": 0, "agentId": None, "campaignId": None},
        {"callId": sent[3]["callId"], "startedAt": "2026-10-01T09:15:00.000Z", "answeredAt": None,
         "endedAt": "2026-10-01T09:15:00.001Z", "durationSeconds": 0.001, "billedMinutes": 1,
         "fromNumber": None, "toNumber": None, "direction": None, "disposition": "other",
         "cost": 3, "agentId": None, "campaignId": None},
    ]
    # The cost is what the ledger debited for the call, entry by entry.
    with session():
        debited = {e.reference: -e.amount for e in CreditEntry.in_workspace(api.actor.workspace_id)}
    assert {f"call:{row['callId']}": row["cost"] for row in rows if row["cost"]} == debited
    # The CSV holds the same, empty where NDJSON says null, numbers kept from being formulas.
    assert records(platform, api.actor) == [
        {column: "" if row[column] is None else "'" + row[column] if str(row[column]).startswith("+")
         else str(row[column]) for column in COLUMNS} for row in rows]


def test_the_customer_number_is_masked_without_calls_pii_and_the_workspaces_own_is_not(platform):
    api = owner(platform)
    post_report(platform, api.actor, report(api.actor, "09:00:00", 1000, callType="outbound",
                                            phoneNumber="+14155550100"))
    post_report(platform, api.actor, report(api.actor, "09:01:00", 1000, callType="inbound"))
    member = factories.member(api.actor, "member")
    viewer = factories.member(api.actor, "viewer")
    for actor in (member, viewer):
        rows = records(platform, actor, format="ndjson")
        assert [(r["fromNumber"], r["toNumber"]) for r in rows] == [("+14155550100", MASKED), (MASKED, None)]
    rows = records(platform, api.actor, format="ndjson")
    assert [(r["fromNumber"], r["toNumber"]) for r in rows] == [("+14155550100", "+14155550123"),
                                                                  ("+14155550123", None)]
    assert [(r["fromNumber"], r["toNumber"]) for r in records(platform, member)] == [("'+14155550100", "'" + MASKED),
                                                                                     ("'" + MASKED, "")]


def test_a_cell_that_would_start_a_formula_is_quoted(platform):
    api = owner(platform)
    post_report(platform, api.actor, report(api.actor, "09:00:00", 1000, callType="outbound", phoneNumber="=1+2",
                                            customer="@SUM(A1)"))
    [row] = records(platform, api.actor)
    assert row["fromNumber"] == "'=1+2" and row["toNumber"] == "'@SUM(A1)"


def test_the_filters_keep_the_calls_they_name_and_bounds_are_checked(platform):
    api = owner(platform)
    agent = api.create()
    calls = [report(api.actor, "09:00:00", 1000, agentId=agent["id"]),
             report(api.actor, "10:00:00", 1000, callType="outbound"),
             report(api.actor, "11:00:00", 1000, callType="web", agentId=agent["id"])]
    for body in calls:
        post_report(platform, api.actor, body)
    ids = [body["callId"] for body in calls]

    def kept(**params):
        return [row["callId"] for row in records(platform, api.actor, format="ndjson", **params)]

    assert kept() == ids
    # since inclusive, until exclusive, on the call's start.
    assert kept(since="2026-10-01T10:00:00Z") == ids[1:]
    assert kept(until="2026-10-01T10:00:00Z") == ids[:1]
    assert kept(since="2026-10-01T09:00:00.001Z", until="2026-10-01T11:00:00.001Z") == ids[1:]
    assert kept(since="2026-10-01T12:00:00+02:00", until="2026-10-01T13:00:00+02:00") == ids[1:2]
    assert kept(agentId=agent["id"]) == [ids[0], ids[2]]
    assert kept(direction="outbound") == [ids[1]]
    assert kept(direction="web", agentId=agent["id"]) == [ids[2]]
    assert kept(agentId=str(uuid.uuid4())) == []
    error = records(platform, api.actor, 400, since="2026-10-01T10:00:00Z", until="2026-10-01T10:00:00Z")
    assert error["message"] == "until must be later than since." and error["code"] == "validation_failed"
    assert "direction" in records(platform, api.actor, 400, direction="sideways")["message"]
    assert "since" in records(platform, api.actor, 400, since="2026-10-01T10:00:00")["message"]


def test_records_come_by_start_then_id_across_read_batches(platform):
    api = owner(platform)
    # More than two batches of the reads (500), three calls to each start, across the batches' edges.
    rows = [factories.import_row(i // 3) for i in range(1102)]
    response = platform.client.post("/api/v2/call/import", params={"workspaceId": api.actor.workspace_id},
                                    headers={**api.actor.headers, "Content-Type": "text/csv"},
                                    content=factories.csv_body(rows))
    assert response.json()["data"]["result"]["imported"] == 1102
    expected = [row["callId"] for row in sorted(rows, key=lambda row: (row["startedAt"], row["callId"]))]
    assert [row["callId"] for row in records(platform, api.actor)] == expected
    assert [row["callId"] for row in records(platform, api.actor, format="ndjson")] == expected


def test_an_imported_call_the_workspace_does_not_debit_costs_nothing_and_one_it_debits_costs_its_minutes(platform):
    api = owner(platform)
    unpaid = factories.import_row(0, durationMs=90_000, endedAt="2026-10-01T09:01:30Z", endedReason="voicemail",
                                  answeredAt="2026-10-01T10:00:05+01:00")
    paid = factories.import_row(5, durationMs=90_000, endedAt="2026-10-01T09:06:30Z")

    def import_file(row):
        response = platform.client.post("/api/v2/call/import", params={"workspaceId": api.actor.workspace_id},
                                        headers={**api.actor.headers, "Content-Type": "application/x-ndjson"},
                                        content=factories.ndjson_body([row]))
        assert response.json()["data"]["result"]["imported"] == 1

    import_file(unpaid)
    api("PATCH", "/workspace", json={"settings": {"debitImportedCalls": True}})
    import_file(paid)
    rows = records(platform, api.actor, format="ndjson")
    assert [(r["callId"], r["billedMinutes"], r["cost"], r["disposition"], r["answeredAt"]) for r in rows] == [
        (unpaid["callId"], 2, 0, "voicemail", "2026-10-01T09:00:05.000Z"), (paid["callId"], 2, 2, "completed", None)]


def test_another_workspaces_calls_are_not_in_the_records(platform):
    api, other = owner(platform), owner(platform)
    post_report(platform, other.actor, report(other.actor, "09:00:00", 1000))
    assert records(platform, api.actor, format="ndjson") == []
    assert records(platform, api.actor) == []
    # Its agent's id finds nothing here either.
    agent = other.create()
    post_report(platform, other.actor, report(other.actor, "09:00:00", 1000, agentId=agent["id"]))
    assert records(platform, api.actor, format="ndjson", agentId=agent["id"]) == []


def test_reading_the_records_needs_calls_cdr_read(platform):
    api = owner(platform)
    key = platform.key_actor(api.actor, permissions=["calls:read"])
    error = records(platform, key, 403)
    assert "calls:cdr-read" in error["message"]
    assert records(platform, platform.key_actor(api.actor, permissions=["calls:cdr-read"])) == []


@pytest.mark.parametrize("ended_reason, category, expected", [
    ("customer-ended-call", None, "completed"), ("Assistant-Ended-Call ", "error", "completed"),
    ("assistant-forwarded-call", None, "answered"), ("customer-did-not-answer", None, "no-answer"),
    ("customer-busy", None, "busy"), ("voicemail", None, "voicemail"), ("failed-to-connect", None, "failed"),
    ("something-new", "customer", "completed"), ("something-new", "transfer", "answered"),
    ("something-new", "error", "failed"), ("something-new", "unheard-of", "other"), (None, None, "other"),
])
def test_the_disposition_is_the_fixed_table_of_the_reason_then_the_category(ended_reason, category, expected):
    assert disposition(ended_reason, category) == expected
