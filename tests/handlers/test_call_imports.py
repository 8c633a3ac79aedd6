"""Calls imported from a file over HTTP: CSV and NDJSON, each bad row reported by its line and
why, idempotency on callId (again: nothing; other content: a conflict row), a callId of another
workspace, no webhook event for an imported call, the debit as the workspace's setting says,
unreadable files refused whole, and the row limit at and just past it."""
from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import pytest

from models.billing.tables import CreditEntry
from models.calls.calls import own_call_id
from models.calls.imports import BATCH, COLUMNS
from models.calls.tables import CallTag
from models.kernel.db import session
from models.webhooks.tables import WebhookEvent
from tests.support import factories
from tests.support.client import Api, owner
from tests.support.threads import run_threads


def post_file(api: Api, body: bytes, media_type: str = "text/csv", expect: int = 200) -> dict:
    response = api.client.post("/api/v2/call/import", params={"workspaceId": api.actor.workspace_id},
                               headers={**api.actor.headers, "Content-Type": media_type}, content=body)
    assert response.status_code == expect, response.text
    data = response.json()["data"]
    return data["result"] if expect == 200 else data


def body_of(rows: list, media_type: str) -> bytes:
    return factories.csv_body(rows) if media_type == "text/csv" else factories.ndjson_body(rows)


FORMATS = ["text/csv", "application/x-ndjson"]


@pytest.mark.parametrize("media_type", FORMATS)
def test_good_rows_become_calls_as_a_report_records_them_and_a_second_import_imports_nothing(platform, media_type):
    api = owner(platform)
    agent = api.create()
    rows = [factories.import_row(0, agentId=agent["id"], tags=["billing", "vip"], status="ended",
                                 transcript="AI: Hello.\nUser: Hi.",
                                 callEndReasonCategory="customer", phoneNumber="+14155550100",
                                 recordingUrl="https://recordings.example.com/1.wav"),
            factories.import_row(1, durationMs=None, durationSeconds=41.5, callType="outbound")]
    result = post_file(api, body_of(rows, media_type), media_type)
    assert result == {"imported": 2, "alreadyPresent": 0, "failed": [], "warnings": []}
    first = api("GET", f"/call/{rows[0]['callId']}")["call"]
    assert {k: first[k] for k in ("agentId", "agentName", "callType", "status", "callEndReasonCategory", "endedReason",
                                  "customer", "startedAt", "endedAt", "durationMs", "summary", "transcript", "tags",
                                  "recordingUrl")} == {
        "agentId": agent["id"], "agentName": agent["name"], "callType": "inbound", "status": "ended",
        "callEndReasonCategory": "customer", "endedReason": "customer-ended-call", "customer": "+14155550123",
        "startedAt": "2026-10-01T09:00:00.000Z", "endedAt": "2026-10-01T09:00:42.000Z", "durationMs": 42000,
        "summary": "Imported call 0.", "transcript": "AI: Hello.\nUser: Hi.", "tags": ["billing", "vip"],
        "recordingUrl": "https://recordings.example.com/1.wav"}
    assert first["extra"] == {"phoneNumber": "+14155550100"}
    second = api("GET", f"/call/{rows[1]['callId']}")["call"]
    assert second["durationMs"] == 41500 and second["callType"] == "outbound"
    assert second["transcript"] == "AI: Hello. User: Hi."
    # The same file again: every row is there already, with the same content.
    assert post_file(api, body_of(rows, media_type), media_type) == {"imported": 0, "alreadyPresent": 2,
                                                                      "failed": [], "warnings": []}
    assert api("GET", "/call")["pagination"]["total"] == 2


def test_the_same_calls_in_csv_and_in_ndjson_are_the_same_calls(platform):
    api = owner(platform)
    rows = [factories.import_row(i, tags=["a"], structuredData={"score": 3}) for i in range(3)]
    post_file(api, factories.csv_body(rows))
    assert post_file(api, factories.ndjson_body(rows), "application/x-ndjson")["alreadyPresent"] == 3
    seconds = [{**row, "durationMs": None, "durationSeconds": 42} for row in rows]
    seconds = [{k: v for k, v in row.items() if v is not None} for row in seconds]
    assert post_file(api, factories.csv_body(seconds))["alreadyPresent"] == 3


def test_a_row_whose_call_differs_is_a_conflict_row_naming_the_fields_and_changes_nothing(platform):
    api = owner(platform)
    rows = [factories.import_row(i) for i in range(3)]
    post_file(api, factories.csv_body(rows))
    changed = [rows[0], {**rows[1], "summary": "Another summary."}, factories.import_row(5)]
    result = post_file(api, factories.csv_body(changed))
    assert result["imported"] == 1 and result["alreadyPresent"] == 1
    assert result["failed"] == [{"line": 3, "callId": rows[1]["callId"], "reason": (
        f"conflict: A different report for call {rows[1]['callId']} was recorded already; these fields differ: "
        "summary.")}]
    assert api("GET", f"/call/{rows[1]['callId']}")["call"]["summary"] == "Imported call 1."
    # A call the webhook recorded is one too: a row of other content conflicts with it.
    reported = factories.report(api.actor)
    platform.client.post("/api/v2/webhooks/end-of-call-report", headers=api.actor.headers, json=reported)
    row = factories.import_row(0, callId=reported["callId"])
    [failure] = post_file(api, factories.csv_body([row]))["failed"]
    assert failure["line"] == 2 and failure["reason"].startswith("conflict: ")


def test_a_repeated_call_id_in_one_file_is_present_or_a_conflict(platform):
    api = owner(platform)
    row = factories.import_row(0)
    result = post_file(api, factories.ndjson_body([row, row, {**row, "summary": "Other."}]), "application/x-ndjson")
    assert result["imported"] == 1 and result["alreadyPresent"] == 1
    assert [(f["line"], f["reason"][:9]) for f in result["failed"]] == [(3, "conflict:")]


BAD_ROWS = [
    ({"callId": "not-a-uuid"}, "callId must be a UUID"),
    ({"callId": None}, "callId is required."),
    ({"startedAt": None}, "startedAt is required."),
    ({"startedAt": "yesterday"}, "startedAt must be an ISO 8601 date-time"),
    ({"endedAt": "2026-10-01T09:00:42"}, "endedAt must carry a time zone offset"),
    ({"endedAt": "2026-10-01T08:00:00Z"}, "endedAt must not be before startedAt."),
    ({"durationMs": -1}, "durationMs must be a number of at least 0."),
    ({"durationMs": "soon"}, "durationMs must be a number of at least 0."),
    ({"durationMs": 10_000}, "durationMs (10000) must agree with endedAt - startedAt"),
    ({"durationSeconds": 42}, "give durationMs or durationSeconds, not both."),
    ({"answeredAt": "2026-10-01 09:00"}, "answeredAt must carry a time zone offset"),
    ({"callType": "fax"}, "callType must be one of inbound, outbound, web."),
    ({"agentId": "agent-7"}, "agentId must be a UUID"),
    ({"customer": "+1" + "5" * 63}, "customer must be at most 64 characters; 65 given."),
    ({"endedReason": "x\u0007y"}, "endedReason must not contain a control character (U+0007 at position 1)."),
    ({"tags": ["ok", "x" * 65]}, "tags[1] must be 1 to 64 characters once trimmed; 65 given."),
    ({"tags": [f"t{i}" for i in range(51)]}, "tags must hold at most 50 tags; 51 given."),
    ({"structuredData": {f"f{i}": i for i in range(101)}}, "structuredData must hold at most 100 fields."),
]


@pytest.mark.parametrize("media_type", FORMATS)
def test_each_bad_row_is_reported_by_its_line_and_why_and_keeps_no_other_out(platform, media_type):
    api = owner(platform)
    good = [factories.import_row(i) for i in range(2)]
    bad = [factories.import_row(10 + i, **change) for i, (change, _) in enumerate(BAD_ROWS)]
    result = post_file(api, body_of([good[0], *bad, good[1]], media_type), media_type)
    assert result["imported"] == 2 and result["alreadyPresent"] == 0
    first_bad_line = 3 if media_type == "text/csv" else 2  # a CSV's header is line 1
    assert [f["line"] for f in result["failed"]] == [first_bad_line + i for i in range(len(bad))]
    for failure, row, (change, reason) in zip(result["failed"], bad, BAD_ROWS):
        assert reason in failure["reason"], (change, failure)
        assert failure.get("callId") == row.get("callId"), failure
    assert api("GET", "/call")["pagination"]["total"] == 2


def test_an_ndjson_line_that_is_no_object_or_names_unknown_fields_fails_alone(platform):
    api = owner(platform)
    good = factories.import_row(0)
    body = factories.ndjson_body([good, "{not json", "[1, 2]", {**factories.import_row(1), "cost": 3}, ""])
    result = post_file(api, body + b"\n\n", "application/x-ndjson")
    assert result["imported"] == 1
    assert [(f["line"], f["reason"]) for f in result["failed"]] == [
        (2, "the line is not a JSON object: it cannot be read as JSON."), (3, "the line is not a JSON object."),
        (4, "unknown fields: cost; the fields are " + ", ".join(COLUMNS) + ".")]


def test_a_csv_row_with_cells_past_the_header_fails_alone_and_padded_cells_are_trimmed(platform):
    api = owner(platform)
    row = factories.import_row(0)
    body = (f"callId,startedAt,endedAt,tags\n {row['callId']} ,{row['startedAt']},{row['endedAt']}, a ; b \n"
            f"{uuid.uuid4()},{row['startedAt']},{row['endedAt']},x,extra\n").encode()
    result = post_file(api, body)
    assert result["imported"] == 1 and result["failed"] == [
        {"line": 3, "reason": "the row has 1 cell(s) more than the header has columns."}]
    call = api("GET", f"/call/{row['callId']}")["call"]
    assert call["tags"] == ["a", "b"] and call["durationMs"] == 42000


@pytest.mark.parametrize("body, words", [
    (b"callId,startedAt,endedAt,price\n", "unknown columns: price"),
    (b"callId,startedAt,CALLID,endedAt\n", "names a column twice"),
    (b"callId,startedAt\n", "no endedAt column"),
    (b"\n\n", "The CSV body is empty"),
    (b"callId,startedAt,endedAt\n\"broken,x,y\n", "cannot be read at line"),
    (b"callId,startedAt,endedAt\n\xff\n", "not valid UTF-8"),
    (b"callId,startedAt,endedAt\n\x00\n", "NUL"),
])
def test_a_csv_that_cannot_be_read_is_400_and_imports_nothing(platform, body, words):
    api = owner(platform)
    error = post_file(api, body + factories.csv_body([factories.import_row(0)]).split(b"\n", 1)[1], expect=400)
    assert words in error["message"] and error["code"] == "validation_failed"
    assert api("GET", "/call")["pagination"]["total"] == 0


def test_an_unreadable_ndjson_file_or_another_media_type_is_refused(platform):
    api = owner(platform)
    error = post_file(api, b'{"callId": "\xff"}\n', "application/x-ndjson", expect=400)
    assert "not valid UTF-8" in error["message"]
    error = post_file(api, factories.ndjson_body([factories.import_row(0)]), "application/json", expect=415)
    assert "text/csv" in error["message"] and "application/x-ndjson" in error["message"]
    error = post_file(api, b"callId\n", "text/csv; charset=latin-1", expect=415)
    assert "UTF-8" in error["message"]


@pytest.mark.parametrize("settings_overrides", [{"max_body_bytes": 4 << 20}])
def test_ten_thousand_rows_are_imported_and_one_more_is_refused_whole(platform):
    api = owner(platform)
    rows = [{key: row[key] for key in ("callId", "startedAt", "endedAt")}
            for row in (factories.import_row(i) for i in range(10_001))]
    for media_type in FORMATS:
        error = post_file(api, body_of(rows, media_type), media_type, expect=400)
        assert error["message"].endswith("body has more than 10000 rows; import it in parts.")
    assert api("GET", "/call")["pagination"]["total"] == 0
    result = post_file(api, body_of(rows[:10_000], "text/csv"))
    assert result == {"imported": 10_000, "alreadyPresent": 0, "failed": [], "warnings": []}
    assert api("GET", "/call")["pagination"]["total"] == 10_000


def test_an_imported_call_fires_no_webhook_event_though_a_subscription_is_there(platform):
    api = owner(platform)
    factories.webhook_subscription(api.actor, "https://hooks.example.com/calls")
    post_file(api, factories.csv_body([factories.import_row(i) for i in range(3)]))
    with session():
        assert WebhookEvent.in_workspace(api.actor.workspace_id).count() == 0
    # The subscription is live: a reported call gets its event.
    platform.client.post("/api/v2/webhooks/end-of-call-report", headers=api.actor.headers,
                         json=factories.report(api.actor))
    with session():
        assert WebhookEvent.in_workspace(api.actor.workspace_id).count() == 1


def _debits(workspace_id: str) -> dict[str, int]:
    with session():
        return {e.reference: e.amount for e in CreditEntry.in_workspace(workspace_id).where(CreditEntry.kind == "call")}


def test_imported_calls_are_debited_only_when_the_workspace_says_so(platform):
    api = owner(platform)
    assert api("GET", "/workspace")["workspace"]["settings"]["debitImportedCalls"] is False
    unpaid = factories.import_row(0, durationMs=None, endedAt="2026-10-01T09:01:00.001Z")
    post_file(api, factories.csv_body([unpaid]))
    assert _debits(api.actor.workspace_id) == {} and api("GET", "/workspace/credits")["balance"] == 0
    settings = api("PATCH", "/workspace", json={"settings": {"debitImportedCalls": True}})["workspace"]["settings"]
    assert settings["debitImportedCalls"] is True
    # 60.001 s is two started minutes; exactly 60 s is one.
    paid = [factories.import_row(1, durationMs=None, endedAt="2026-10-01T09:02:00.001Z"),
            factories.import_row(2, durationMs=None, endedAt="2026-10-01T09:03:00Z")]
    post_file(api, factories.csv_body([unpaid, *paid]))
    assert _debits(api.actor.workspace_id) == {f"call:{paid[0]['callId']}": -2, f"call:{paid[1]['callId']}": -1}
    assert api("GET", "/workspace/credits")["balance"] == -3


def test_a_call_id_of_another_workspace_is_recorded_under_an_id_of_its_own(platform):
    first, second = owner(platform), owner(platform)
    row = factories.import_row(0)
    post_file(first, factories.csv_body([row]))
    result = post_file(second, factories.csv_body([row]))
    own_id = own_call_id(second.actor.workspace_id, row["callId"])
    assert result["imported"] == 1 and result["warnings"] == [{
        "line": 2, "callId": row["callId"], "recordedAs": own_id,
        "message": f"callId {row['callId']} could not be used; the call is recorded under {own_id}, "
                   "the id to read it by."}]
    assert second("GET", f"/call/{own_id}")["call"]["summary"] == row["summary"]
    second("GET", f"/call/{row['callId']}", 404)
    assert first("GET", f"/call/{row['callId']}")["call"]["workspaceId"] == first.actor.workspace_id
    # Again: found under its own id, and the other workspace's call is untouched.
    assert post_file(second, factories.csv_body([row]))["alreadyPresent"] == 1
    changed = post_file(second, factories.csv_body([{**row, "summary": "Changed."}]))
    assert changed["failed"][0]["reason"].startswith(f"conflict: A different report for call {own_id}")
    assert first("GET", f"/call/{row['callId']}")["call"]["summary"] == row["summary"]


def test_an_agent_of_no_agent_of_the_workspace_is_kept_with_a_warning(platform):
    api, other = owner(platform), owner(platform)
    foreign = other.create()
    row = factories.import_row(0, agentId=foreign["id"])
    [warning] = post_file(api, factories.ndjson_body([row]), "application/x-ndjson")["warnings"]
    assert warning["recordedAs"] == row["callId"] and foreign["id"] in warning["message"]
    assert api("GET", f"/call/{row['callId']}")["call"]["agentName"] is None


def test_structured_data_is_kept_for_declared_fields(platform):
    api = owner(platform)
    factories.insight(api.actor, "score")
    row = factories.import_row(0, structuredData={"score": 4})
    post_file(api, factories.csv_body([row]))
    assert api("GET", f"/call/{row['callId']}")["call"]["structuredData"] == {"score": 4}
    bad = factories.import_row(1)
    result = post_file(api, b"callId,startedAt,endedAt,structuredData\n"
                       + f"{bad['callId']},{bad['startedAt']},{bad['endedAt']},{{oops\n".encode())
    assert result["failed"][0]["reason"] == "structuredData must be a JSON object of field names and values."


def test_importing_needs_calls_import_and_a_viewer_has_it_not(platform):
    api = owner(platform)
    viewer = Api(platform, factories.member(api.actor, "viewer"))
    error = post_file(viewer, factories.csv_body([factories.import_row(0)]), expect=403)
    assert "calls:import" in error["message"]
    member = Api(platform, factories.member(api.actor, "member"))
    assert post_file(member, factories.csv_body([factories.import_row(0)]))["imported"] == 1


def test_the_import_is_in_the_audit_log_with_its_counts_and_no_personal_data(platform):
    api = owner(platform)
    post_file(api, factories.csv_body([factories.import_row(0), factories.import_row(1, callId="x")]))
    [entry] = [e for e in api("GET", "/workspace/logs")["logs"] if e["operationId"] == "importCalls"]
    assert entry["changes"]["imported"] == 1 and entry["changes"]["failed"] == 1
    assert "+14155550123" not in str(entry)
    with session():
        assert CallTag.in_workspace(api.actor.workspace_id).count() == 0


def test_concurrent_imports_of_one_file_and_reports_meanwhile_record_each_call_once(platform):
    api = owner(platform)
    api("PATCH", "/workspace", json={"settings": {"debitImportedCalls": True}})
    # Two batches' worth, so that each import commits, and waits, more than once; each call 61 s long.
    rows = [factories.import_row(i, durationMs=61_000) for i in range(BATCH + 100)]
    rows = [{**row, "endedAt": _plus_61_s(row["startedAt"])} for row in rows]
    body = factories.csv_body(rows)
    reports = [factories.report(api.actor, durationMs=61_000) for _ in range(20)]

    def work(index: int):
        if index < 2:
            return post_file(api, body)
        for report in reports:
            response = platform.client.post("/api/v2/webhooks/end-of-call-report", headers=api.actor.headers,
                                            json=report)
            assert response.status_code == 200, response.text
        return None

    first, second, _ = run_threads(3, work)
    assert first["failed"] == second["failed"] == [] and first["warnings"] == second["warnings"] == []
    assert first["imported"] + second["imported"] == len(rows)
    assert first["alreadyPresent"] + second["alreadyPresent"] == len(rows)
    # The unfiltered total is the count's shards, the filtered one a count of the rows: both agree.
    assert api("GET", "/call")["pagination"]["total"] == len(rows) + 20
    assert api("GET", "/call", callType="inbound")["pagination"]["total"] == len(rows) + 20
    # Every call debited once, two minutes each, and the balance is the ledger's sum.
    debits = _debits(api.actor.workspace_id)
    assert len(debits) == len(rows) + 20 and set(debits.values()) == {-2}
    assert api("GET", "/workspace/credits")["balance"] == -2 * (len(rows) + 20)


def _plus_61_s(moment: str) -> str:
    return (datetime.fromisoformat(moment) + timedelta(seconds=61)).isoformat().replace("+00:00", "Z")
