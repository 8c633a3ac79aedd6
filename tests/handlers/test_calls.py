"""Calls over HTTP: the end-of-call-report webhook (keyed and signed, validation, idempotency),
listing with filters, masking of customer numbers, reading, deleting and exporting calls."""
from __future__ import annotations

import csv
import io
import json
import threading
import uuid
from datetime import datetime, timedelta, timezone

import orjson
import pytest
from standardwebhooks.webhooks import Webhook

from models.kernel.db import session
from tests.support import factories
from tests.support.client import Api, owner
from tests.support.reports import QUERY_LEFT_OUT, post_report

MASKED = "+*******0123"


def signed_headers(secret: str, raw: bytes, *, at: datetime | None = None, message_id: str | None = None) -> dict:
    """As the call runtime signs a report: a new webhook-id unless ``message_id`` repeats one."""
    at = at or datetime.now(timezone.utc)
    message_id = message_id or f"msg_{uuid.uuid4().hex}"
    signature = Webhook(secret).sign(message_id, at, raw.decode())
    return {"webhook-id": message_id, "webhook-timestamp": str(int(at.timestamp())), "webhook-signature": signature}


# --- ingest with a bearer credential ---------------------------------------------------------

def test_a_report_is_recorded_with_every_field_and_its_unknown_fields_kept(platform):
    api = owner(platform)
    body = factories.report(api.actor, tags=["Billing", "billing ", "vip"], vendorField={"a": 1})
    result = post_report(platform, api.actor, body)["result"]
    assert result == {"callId": body["callId"], "created": True, "replayed": False, "ingestWarnings": []}
    call = api("GET", f"/call/{body['callId']}")["call"]
    assert call["status"] == "completed" and call["customer"] == "+14155550123"
    assert call["durationMs"] == 42000 and call["callType"] == "inbound"
    assert call["startedAt"] == body["startedAt"].replace("Z", ".000Z")
    assert call["transcript"] == body["transcript"] and call["summary"] == body["summary"]
    assert call["recordingUrl"] == body["recordingUrl"] and call["endedReason"] == "customer-ended-call"
    assert call["tags"] == ["Billing", "vip"]  # trimmed, unique without regard to case
    assert call["extra"] == {"vendorField": {"a": 1}}
    assert call["recording"] is None and call["transcription"] is None


def test_timestamps_with_offsets_are_stored_in_utc_and_duration_defaults_to_their_difference(platform):
    api = owner(platform)
    body = factories.report(api.actor, startedAt="2026-11-23T10:00:00+02:00", endedAt="2026-11-23T08:01:30Z",
                            durationMs=None)
    post_report(platform, api.actor, body)
    call = api("GET", f"/call/{body['callId']}")["call"]
    assert call["startedAt"] == "2026-11-23T08:00:00.000Z" and call["durationMs"] == 90000


def test_a_redelivery_changes_nothing_and_a_different_report_is_a_conflict_naming_the_fields(platform):
    api = owner(platform)
    body = factories.report(api.actor)
    post_report(platform, api.actor, body)
    again = post_report(platform, api.actor, {**body, "timestamp": "2030-01-01T00:00:00Z"})
    assert again["result"]["created"] is False
    changed = post_report(platform, api.actor, {**body, "summary": "Another.", "durationMs": 41_000}, expect=409)
    assert "durationMs, summary" in changed["message"]
    assert changed["result"]["differingFields"] == ["durationMs", "summary"]
    assert post_report(platform, api.actor, {**body, "durationMs": 42000.5}, expect=409)
    assert api("GET", f"/call/{body['callId']}")["call"]["summary"] == body["summary"]
    assert api("GET", "/call")["pagination"]["total"] == 1


def test_a_call_id_of_another_workspace_is_recorded_under_an_id_of_its_own_and_tells_nothing_of_it(platform):
    first, second = owner(platform), owner(platform)
    body = factories.report(first.actor)
    post_report(platform, first.actor, body)
    kept = first("GET", f"/call/{body['callId']}")["call"]
    fresh = post_report(platform, second.actor, factories.report(second.actor))
    clash = post_report(platform, second.actor, {**body, "workspaceId": second.actor.workspace_id})
    own_id = clash["result"]["callId"]
    # What differs from the answer to a free id is the id, and the warning saying it was not used.
    assert own_id != body["callId"] and str(uuid.UUID(own_id)) == own_id
    assert clash["message"] == fresh["message"] and clash["result"]["created"] is fresh["result"]["created"] is True
    warning = f"callId {body['callId']} could not be used; the call is recorded under {own_id}, the id to read it by."
    assert clash["result"]["ingestWarnings"] == [warning]
    assert fresh["result"]["ingestWarnings"] == []
    call = second("GET", f"/call/{own_id}")["call"]
    assert call["workspaceId"] == second.actor.workspace_id and call["summary"] == body["summary"]
    assert call["ingestWarnings"] == clash["result"]["ingestWarnings"]
    second("GET", f"/call/{body['callId']}", expect=404)
    assert first("GET", f"/call/{body['callId']}")["call"] == kept
    again = post_report(platform, second.actor, {**body, "workspaceId": second.actor.workspace_id})
    assert again["result"] == {**clash["result"], "created": False}
    assert second("GET", "/call")["pagination"]["total"] == 2 and first("GET", "/call")["pagination"]["total"] == 1
    changed = post_report(platform, second.actor, {**body, "workspaceId": second.actor.workspace_id,
                                                   "summary": "Another."}, expect=409)
    assert changed["result"] == {"callId": own_id, "differingFields": ["summary"]}


def test_a_call_recorded_under_its_own_id_is_found_by_a_redelivery_once_the_call_id_is_free(platform):
    first, second = owner(platform), owner(platform)
    body = factories.report(first.actor)
    post_report(platform, first.actor, body)
    theirs = {**body, "workspaceId": second.actor.workspace_id}
    own_id = post_report(platform, second.actor, theirs)["result"]["callId"]
    first("DELETE", f"/call/{body['callId']}")
    again = post_report(platform, second.actor, theirs)["result"]
    assert again["callId"] == own_id and again["created"] is False
    assert second("GET", "/call")["pagination"]["total"] == 1
    entries = second("GET", "/workspace/credits/entries", kind="call")["entries"]
    assert [entry["amount"] for entry in entries] == [-1]


def test_concurrent_deliveries_of_one_report_record_one_call(platform):
    api = owner(platform)
    body = factories.report(api.actor)
    outcomes, errors = [], []

    def deliver():
        try:
            outcomes.append(post_report(platform, api.actor, body)["result"]["created"])
        except AssertionError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=deliver) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and sorted(outcomes) == [False] * 7 + [True]
    assert api("GET", "/call")["pagination"]["total"] == 1


@pytest.mark.parametrize("change, rule", [
    ({"type": "call-started"}, "type"),
    ({"callId": "not-a-uuid"}, "callId"),
    ({"agentId": "nope"}, "agentId"),
    ({"durationMs": -1}, "durationMs"),
    ({"startedAt": "2026-11-23T10:00:00"}, "startedAt"),
    ({"startedAt": "yesterday"}, "startedAt"),
    ({"callType": "carrier-pigeon"}, "callType"),
    ({"tags": ["x" * 65]}, "tags"),
    ({"tags": ["   "]}, "tags[0]"),
    ({"startedAt": None}, "startedAt"),
    ({"customer": "+1\x00"}, "customer"),
])
def test_an_invalid_report_is_refused_naming_the_field(platform, change, rule):
    api = owner(platform)
    body = factories.report(api.actor)
    body.update(change)
    body = {k: v for k, v in body.items() if v is not None}
    error = post_report(platform, api.actor, body, expect=400)
    assert rule in error["message"]
    assert api("GET", "/call")["pagination"]["total"] == 0


def test_boundaries_zero_duration_and_end_equal_to_start_are_accepted_end_before_start_is_not(platform):
    api = owner(platform)
    same = factories.report(api.actor, durationMs=0)
    same["endedAt"] = same["startedAt"]
    post_report(platform, api.actor, same)
    before = factories.report(api.actor)
    before["endedAt"] = (datetime.fromisoformat(before["startedAt"]) - timedelta(seconds=1)).isoformat()
    assert "endedAt must not be before startedAt" in post_report(platform, api.actor, before, expect=400)["message"]


def _lasting(actor, duration_ms: float, span: timedelta) -> dict:
    """A report whose durationMs is ``duration_ms`` (None: left out) and whose endedAt is ``span``
    after its startedAt."""
    body = factories.report(actor, durationMs=duration_ms)
    body["endedAt"] = (datetime.fromisoformat(body["startedAt"]) + span).isoformat()
    return body


def test_a_call_may_last_24_hours_and_not_a_millisecond_more_by_either_figure(platform):
    api = owner(platform)
    day = timedelta(hours=24)
    post_report(platform, api.actor, _lasting(api.actor, 86_400_000, day))
    longer = post_report(platform, api.actor, _lasting(api.actor, 86_400_001, day), expect=400)["message"]
    assert longer.startswith("durationMs must be at most 86400000 ms (24 h, MAX_CALL_DURATION_S)")
    spanned = _lasting(api.actor, 86_400_000, day + timedelta(milliseconds=1))
    message = post_report(platform, api.actor, spanned, expect=400)["message"]
    assert message.startswith("endedAt must be at most 86400000 ms (24 h, MAX_CALL_DURATION_S) after startedAt")
    century = _lasting(api.actor, None, timedelta(days=36_525))  # durationMs left out: the span
    assert "endedAt must be at most" in post_report(platform, api.actor, century, expect=400)["message"]
    shorter = _lasting(api.actor, 86_400_000, timedelta(days=36_525))
    assert "endedAt must be at most" in post_report(platform, api.actor, shorter, expect=400)["message"]
    assert api("GET", "/call")["pagination"]["total"] == 1


@pytest.mark.parametrize("settings_overrides", [{"max_call_duration_s": 60}])
def test_the_longest_call_is_the_setting(platform):
    api = owner(platform)
    post_report(platform, api.actor, _lasting(api.actor, 60_000, timedelta(seconds=60)))
    error = post_report(platform, api.actor, _lasting(api.actor, 60_001, timedelta(seconds=60)), expect=400)
    assert "at most 60000 ms (0.0166667 h, MAX_CALL_DURATION_S)" in error["message"]


@pytest.mark.parametrize("span_s, slack_ms", [(10, 5_000), (50, 5_000), (100, 10_000), (3_600, 360_000)])
def test_durationMs_must_agree_with_the_times_within_5_s_or_a_tenth(platform, span_s, slack_ms):
    api = owner(platform)
    span, span_ms = timedelta(seconds=span_s), span_s * 1000
    for duration_ms in (span_ms + slack_ms, max(0, span_ms - slack_ms)):
        post_report(platform, api.actor, _lasting(api.actor, duration_ms, span))
    for duration_ms in (span_ms + slack_ms + 1, span_ms - slack_ms - 1):
        if duration_ms < 0:
            continue
        error = post_report(platform, api.actor, _lasting(api.actor, duration_ms, span), expect=400)
        assert error["message"].startswith(f"durationMs ({duration_ms}) must agree with endedAt - startedAt "
                                           f"({span_ms} ms) within {slack_ms} ms"), error


def test_the_report_must_name_the_workspace_of_the_query(platform):
    api, other = owner(platform), owner(platform)
    body = factories.report(api.actor, workspaceId=other.actor.workspace_id)
    error = post_report(platform, api.actor, body, expect=400)
    assert "workspaceId" in error["message"] and error["code"] == "workspace_mismatch"
    # The other workspace's owner naming its own workspace in the query is refused alike.
    mine = factories.report(api.actor)
    error = post_report(platform, other.actor, mine, expect=400)
    assert error["code"] == "workspace_mismatch" and api("GET", "/call")["pagination"]["total"] == 0


def test_without_the_query_the_report_names_the_workspace(platform):
    api, other = owner(platform), owner(platform)
    body = factories.report(api.actor)
    result = post_report(platform, api.actor, body, workspace_id=QUERY_LEFT_OUT)["result"]
    assert result["created"] is True and api("GET", f"/call/{body['callId']}")["call"]["workspaceId"] == \
        api.actor.workspace_id
    # The body's workspace is checked as the query's would be: a caller of another one is refused.
    error = post_report(platform, other.actor, factories.report(api.actor), expect=403, workspace_id=QUERY_LEFT_OUT)
    assert error["code"] == "forbidden"
    key = factories.api_key(api.actor, permissions=["calls:read"])
    error = post_report(platform, key, factories.report(api.actor), expect=403, workspace_id=QUERY_LEFT_OUT)
    assert "calls:webhook-payload" in error["message"]
    assert api("GET", "/call")["pagination"]["total"] == 1


def test_without_the_query_a_report_without_a_workspace_is_refused(platform):
    api = owner(platform)
    body = factories.report(api.actor)
    del body["workspaceId"]
    error = post_report(platform, api.actor, body, expect=400, workspace_id=QUERY_LEFT_OUT)
    assert "workspaceId" in error["message"] and error["code"] == "validation_failed"
    post_report(platform, api.actor, None, raw=b'{"workspaceId": ', expect=400, workspace_id=QUERY_LEFT_OUT)


def test_delivering_needs_calls_webhook_payload(platform):
    api = owner(platform)
    key = factories.api_key(api.actor, permissions=["calls:read"])
    error = post_report(platform, key, factories.report(api.actor), expect=403)
    assert "calls:webhook-payload" in error["message"]
    allowed = factories.api_key(api.actor, permissions=["calls:webhook-payload"])
    assert post_report(platform, allowed, factories.report(api.actor))["result"]["created"] is True


def test_structured_data_of_unknown_fields_is_listed_in_the_warnings_and_the_report_kept(platform):
    api = owner(platform)
    body = factories.report(api.actor, structuredData={"nonexistent": 3}, agentId=str(uuid.uuid4()))
    warnings = post_report(platform, api.actor, body)["result"]["ingestWarnings"]
    assert any("nonexistent" in w for w in warnings) and any("agentId" in w for w in warnings)
    assert api("GET", f"/call/{body['callId']}")["call"]["ingestWarnings"] == warnings


# --- ingest signed with the workspace's signing secret ---------------------------------------

def test_a_signed_report_is_accepted_and_the_secret_is_shown_only_once(platform):
    api = owner(platform)
    created = api("POST", "/webhooks/signing-secrets", json={})["signingSecret"]
    secret = created["secret"]
    assert secret.startswith("whsec_") and created["current"] is True and created["expiresAt"] is None
    listed = api("GET", "/webhooks/signing-secrets")["signingSecrets"]
    assert [s["id"] for s in listed] == [created["id"]] and "secret" not in listed[0]
    raw = orjson.dumps(factories.report(api.actor))
    result = post_report(platform, api.actor, None, raw=raw, headers=signed_headers(secret, raw))
    assert result["result"]["created"] is True
    # As the call runtime sends it: the body names the workspace whose secret signed it.
    raw = orjson.dumps(factories.report(api.actor))
    result = post_report(platform, api.actor, None, raw=raw, headers=signed_headers(secret, raw, message_id="msg_2"),
                         workspace_id=QUERY_LEFT_OUT)
    assert result["result"]["created"] is True
    other = owner(platform)
    foreign = orjson.dumps(factories.report(other.actor))
    post_report(platform, api.actor, None, raw=foreign, headers=signed_headers(secret, foreign, message_id="msg_3"),
                workspace_id=QUERY_LEFT_OUT, expect=401)


def test_a_signature_that_does_not_verify_is_refused_with_401(platform):
    api = owner(platform)
    secret = api("POST", "/webhooks/signing-secrets", json={})["signingSecret"]["secret"]
    raw = orjson.dumps(factories.report(api.actor))
    tampered = raw.replace(b"completed", b"COMPLETED")
    assert "does not verify" in post_report(platform, api.actor, None, raw=tampered, expect=401,
                                            headers=signed_headers(secret, raw))["message"]
    headers = signed_headers(secret, raw)
    headers["webhook-signature"] = "garbage"
    post_report(platform, api.actor, None, raw=raw, expect=401, headers=headers)
    missing = signed_headers(secret, raw)
    del missing["webhook-id"]
    assert "webhook-id" in post_report(platform, api.actor, None, raw=raw, expect=401, headers=missing)["message"]
    other = owner(platform)
    other_secret = other("POST", "/webhooks/signing-secrets", json={})["signingSecret"]["secret"]
    post_report(platform, api.actor, None, raw=raw, expect=401, headers=signed_headers(other_secret, raw))
    assert api("GET", "/call")["pagination"]["total"] == 0


def test_the_replay_window_is_five_minutes_either_way(platform):
    api = owner(platform)
    secret = api("POST", "/webhooks/signing-secrets", json={})["signingSecret"]["secret"]
    now = datetime.now(timezone.utc)
    for offset, expect in ((-290, 200), (290, 200), (-310, 401), (310, 401)):
        raw = orjson.dumps(factories.report(api.actor))
        data = post_report(platform, api.actor, None, raw=raw, expect=expect,
                           headers=signed_headers(secret, raw, at=now + timedelta(seconds=offset)))
        if expect == 401:
            assert "5 minutes" in data["message"]


def test_a_signed_report_replayed_after_its_call_was_deleted_is_answered_200_and_not_taken_in(platform):
    api = owner(platform)
    secret = api("POST", "/webhooks/signing-secrets", json={})["signingSecret"]["secret"]
    report = factories.report(api.actor)
    raw = orjson.dumps(report)
    headers = signed_headers(secret, raw)
    assert post_report(platform, api.actor, None, raw=raw, headers=headers)["result"]["created"] is True
    api("DELETE", f"/call/{report['callId']}")
    for _ in range(2):  # the very request again, within the signature's five minutes
        data = post_report(platform, api.actor, None, raw=raw, headers=headers, workspace_id=QUERY_LEFT_OUT)
        assert data["result"] == {"callId": report["callId"], "created": False, "replayed": True,
                                  "ingestWarnings": []}
        assert "processed already" in data["message"]
    api("GET", f"/call/{report['callId']}", 404)
    # The id is the workspace's: another workspace's report may carry the same one.
    other = owner(platform)
    other_secret = other("POST", "/webhooks/signing-secrets", json={})["signingSecret"]["secret"]
    foreign = orjson.dumps(factories.report(other.actor))
    same_id = signed_headers(other_secret, foreign, message_id=headers["webhook-id"])
    assert post_report(platform, other.actor, None, raw=foreign, headers=same_id)["result"]["created"] is True
    # A report sent with a bearer credential carries no id, and is taken in as before.
    assert post_report(platform, api.actor, report)["result"] == {"callId": report["callId"], "created": True,
                                                                  "replayed": False, "ingestWarnings": []}


def test_a_signed_report_refused_with_400_or_409_leaves_its_webhook_id_for_the_senders_retry(platform):
    api = owner(platform)
    secret = api("POST", "/webhooks/signing-secrets", json={})["signingSecret"]["secret"]
    recorded = factories.report(api.actor)
    post_report(platform, api.actor, recorded)
    backwards = factories.report(api.actor, endedAt="2020-01-01T00:00:00Z")  # refused by the ingest: 400
    conflicting = {**recorded, "summary": "Another summary."}  # a different report for a recorded call: 409
    for refused, status in ((backwards, 400), (conflicting, 409)):
        raw = orjson.dumps(refused)
        headers = signed_headers(secret, raw)
        post_report(platform, api.actor, None, raw=raw, headers=headers, expect=status)
        corrected = orjson.dumps(factories.report(api.actor))
        retry = signed_headers(secret, corrected, message_id=headers["webhook-id"])
        result = post_report(platform, api.actor, None, raw=corrected, headers=retry)["result"]
        assert result["created"] is True and result["replayed"] is False
        assert post_report(platform, api.actor, None, raw=corrected, headers=retry)["result"]["replayed"] is True


@pytest.mark.parametrize("name, value, words", [
    ("webhook-timestamp", "+{timestamp}", "ASCII digits"), ("webhook-timestamp", "{timestamp}.0", "ASCII digits"),
    ("webhook-signature", "{signature}=", "base64"), ("webhook-signature", "{signature_with_dot}", "base64"),
    ("webhook-signature", "{signature}  {signature}", "one space"), ("webhook-id", "msg 1", "printable ASCII"),
])
def test_malformed_signature_headers_are_401_naming_the_header_and_its_rule(platform, name, value, words):
    api = owner(platform)
    secret = api("POST", "/webhooks/signing-secrets", json={})["signingSecret"]["secret"]
    raw = orjson.dumps(factories.report(api.actor))
    headers = signed_headers(secret, raw, message_id="msg_1")
    signature = headers["webhook-signature"]
    headers[name] = value.format(timestamp=headers["webhook-timestamp"], signature=signature,
                                 signature_with_dot=signature[:12] + "." + signature[12:])
    error = post_report(platform, api.actor, None, raw=raw, headers=headers, expect=401)
    assert error["code"] == "unauthenticated" and name in error["message"] and words in error["message"], error
    assert api("GET", "/call")["pagination"]["total"] == 0


def test_a_rotated_secret_verifies_for_its_grace_period_only(platform):
    api = owner(platform)
    old = api("POST", "/webhooks/signing-secrets", json={})["signingSecret"]["secret"]
    rotated = api("POST", "/webhooks/signing-secrets", json={"graceSeconds": 3600})
    new = rotated["signingSecret"]["secret"]
    [previous] = rotated["previousSecrets"]
    assert previous["current"] is False and previous["expiresAt"] is not None
    for secret in (old, new):
        raw = orjson.dumps(factories.report(api.actor))
        post_report(platform, api.actor, None, raw=raw, headers=signed_headers(secret, raw))
    # An urgent rotation (a leaked secret): grace 0 ends every older secret at once.
    api("POST", "/webhooks/signing-secrets", json={"graceSeconds": 0})
    assert len(api("GET", "/webhooks/signing-secrets")["signingSecrets"]) == 1
    for secret in (old, new):
        raw = orjson.dumps(factories.report(api.actor))
        post_report(platform, api.actor, None, raw=raw, expect=401, headers=signed_headers(secret, raw))


def test_without_a_secret_a_signed_report_is_refused_and_a_signature_grants_nothing_else(platform):
    api = owner(platform)
    raw = orjson.dumps(factories.report(api.actor))
    fake = signed_headers("whsec_" + "QUFB" * 8, raw)
    assert "no webhook signing secret" in post_report(platform, api.actor, None, raw=raw, expect=401,
                                                       headers=fake)["message"]
    response = platform.client.get("/api/v2/call", params={"workspaceId": api.actor.workspace_id}, headers=fake)
    assert response.status_code == 401


def test_signing_secrets_need_integrations_permissions(platform):
    api = owner(platform)
    viewer = Api(platform, factories.member(api.actor, "viewer"))
    viewer("POST", "/webhooks/signing-secrets", 403, json={})
    assert viewer("GET", "/webhooks/signing-secrets")["signingSecrets"] == []
    api("POST", "/webhooks/signing-secrets", 400, json={"graceSeconds": 604801})


def test_secrets_are_stored_encrypted(platform):
    from models.webhooks.tables import SigningSecret
    api = owner(platform)
    secret = api("POST", "/webhooks/signing-secrets", json={})["signingSecret"]["secret"]
    with session():
        stored = [row.secret_encrypted for row in SigningSecret.in_workspace(api.actor.workspace_id)]
    assert len(stored) == 1 and secret not in stored[0] and secret[6:] not in stored[0]


# --- reading, masking, filtering ---------------------------------------------------------------

def test_customer_numbers_are_masked_without_calls_pii(platform):
    api = owner(platform)
    call_id = factories.call(api.actor)
    member = Api(platform, factories.member(api.actor, "member"))
    assert member("GET", f"/call/{call_id}")["call"]["customer"] == MASKED
    assert member("GET", "/call")["calls"][0]["customer"] == MASKED
    assert api("GET", f"/call/{call_id}")["call"]["customer"] == "+14155550123"
    error = member("GET", "/call", 403, customer="+14155550123")
    assert "calls:pii" in error["message"]
    assert api("GET", "/call", customer="+14155550123")["pagination"]["total"] == 1


def test_an_unknown_or_foreign_call_is_404(platform):
    api, other = owner(platform), owner(platform)
    foreign = factories.call(other.actor)
    api("GET", f"/call/{foreign}", 404)
    api("GET", f"/call/{uuid.uuid4()}", 404)
    api("DELETE", f"/call/{foreign}", 404)
    api("GET", "/call/not-a-uuid", 400)


def test_the_list_filters_and_sorts(platform):
    api = owner(platform)
    agent = factories.agent(api.actor, name="Sales")
    base = datetime(2026, 11, 1, 12, 0)
    ids = {
        "a": factories.call(api.actor, started_at=base, duration_ms=5000.0, agent_id=agent, call_type="outbound",
                            status="completed", summary="Asked about 100% refunds", tags=["VIP"]),
        "b": factories.call(api.actor, started_at=base + timedelta(hours=1), duration_ms=1000.0, call_type="inbound",
                            status="failed", transcript="User: my order_id is 7"),
        "c": factories.call(api.actor, started_at=base + timedelta(hours=2), duration_ms=3000.0, call_type="web",
                            status="completed", customer="+442071234567"),
    }

    def listed(**params):
        return [c["id"] for c in api("GET", "/call", **params)["calls"]]

    assert listed() == [ids["c"], ids["b"], ids["a"]]
    assert listed(sortBy="durationMs", sortOrder="asc") == [ids["b"], ids["c"], ids["a"]]
    assert listed(agentId=agent) == [ids["a"]]
    assert api("GET", "/call", agentId=agent)["calls"][0]["agentName"] == "Sales"
    assert listed(status="completed") == [ids["c"], ids["a"]]
    assert listed(callType="web") == [ids["c"]]
    assert listed(since="2026-11-01T13:00:00Z") == [ids["c"], ids["b"]]
    assert listed(since="2026-11-01T12:00:00Z", until="2026-11-01T13:00:00Z") == [ids["a"]]
    assert listed(until="2026-11-01T14:00:01+01:00") == [ids["b"], ids["a"]]
    assert listed(until="2026-11-01T14:00:00+01:00") == [ids["a"]]  # before, not at
    assert listed(tag="vip") == [ids["a"]]
    assert listed(q="100%") == [ids["a"]] and listed(q="100_") == [] and listed(q="ORDER_ID") == [ids["b"]]
    assert listed(customer="+442071234567") == [ids["c"]]
    assert listed(status="completed", callType="outbound") == [ids["a"]]
    page = api("GET", "/call", limit=1, offset=1)
    assert [c["id"] for c in page["calls"]] == [ids["b"]] and page["pagination"] == {"total": 3, "limit": 1, "offset": 1}
    assert api("GET", "/call", offset=5)["pagination"]["total"] == 3
    assert "until" in api("GET", "/call", 400, since="2026-11-01T13:00:00Z",
                                  until="2026-11-01T13:00:00Z")["message"]
    api("GET", "/call", 400, sortBy="customer")


def test_deleting_a_call_deletes_its_tags_and_it_is_gone(platform):
    api = owner(platform)
    call_id = factories.call(api.actor, tags=["a", "b"])
    api("DELETE", f"/call/{call_id}")
    api("GET", f"/call/{call_id}", 404)
    api("GET", f"/call/{call_id}/tags", 404)
    member = Api(platform, factories.member(api.actor, "viewer"))
    other = factories.call(api.actor)
    member("DELETE", f"/call/{other}", 403)


def test_the_unfiltered_total_follows_concurrent_ingests_redeliveries_and_deletes(platform):
    api = owner(platform)
    other = owner(platform)
    bodies = [factories.report(api.actor) for _ in range(40)]
    errors = []

    def deliver(chunk):
        try:
            for body in chunk:
                post_report(platform, api.actor, body)
                post_report(platform, api.actor, body)  # a redelivery counts no call
        except AssertionError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=deliver, args=(bodies[i::8],)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    factories.call(other.actor)
    assert errors == [] and api("GET", "/call")["pagination"]["total"] == 40
    for body in bodies[:3]:
        api("DELETE", f"/call/{body['callId']}")
    api("DELETE", f"/call/{bodies[0]['callId']}", 404)  # deleted once, taken off once
    assert api("GET", "/call", limit=1)["pagination"]["total"] == 37
    assert api("GET", "/call", offset=100)["pagination"]["total"] == 37  # past the end: the same total
    assert api("GET", "/call", callType="inbound")["pagination"]["total"] == 37  # counted, not summed
    assert other("GET", "/call")["pagination"]["total"] == 1


# --- export ------------------------------------------------------------------------------------

def _export(platform, actor, **params):
    response = platform.client.get("/api/v2/call/export", headers=actor.headers,
                                   params={"workspaceId": actor.workspace_id, **params})
    assert response.status_code == 200, response.text
    return response


def test_export_streams_every_filtered_call_as_csv_in_order_with_masking(platform):
    api = owner(platform)
    base = datetime(2026, 10, 1)
    # More than one batch of the export's reads (500), with equal start times across a batch's edge.
    ids = [factories.call(api.actor, started_at=base + timedelta(minutes=i // 3), summary=f"call {i}",
                          tags=["even"] if i % 2 == 0 else []) for i in range(1203)]
    member = factories.member(api.actor, "member")
    response = _export(platform, member)
    assert response.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert len(rows) == 1203 and len({r["id"] for r in rows}) == 1203 and set(r["id"] for r in rows) == set(ids)
    started = [r["startedAt"] for r in rows]
    assert started == sorted(started, reverse=True)
    assert {r["customer"] for r in rows} == {"'" + MASKED}  # masked, and kept from being a formula
    evens = list(csv.DictReader(io.StringIO(_export(platform, member, tag="even").text)))
    assert len(evens) == 602 and all(r["tags"] == "even" for r in evens)


def test_export_as_ndjson_holds_the_transcript_and_full_numbers_for_calls_pii(platform):
    api = owner(platform)
    call_id = factories.call(api.actor, transcript="AI: =1+1\nUser: hi", summary="=HYPERLINK()")
    lines = _export(platform, api.actor, format="ndjson").text.splitlines()
    [row] = [json.loads(line) for line in lines]
    assert row["id"] == call_id and row["customer"] == "+14155550123" and row["transcript"] == "AI: =1+1\nUser: hi"
    assert row["summary"] == "=HYPERLINK()"
    [csv_row] = list(csv.DictReader(io.StringIO(_export(platform, api.actor).text)))
    assert csv_row["summary"] == "'=HYPERLINK()"


def test_export_needs_calls_export(platform):
    api = owner(platform)
    viewer = Api(platform, factories.member(api.actor, "viewer"))
    viewer("GET", "/call/export", 403)


def test_a_method_the_export_path_lacks_is_405_not_an_operation_on_a_call_named_export(platform):
    api = owner(platform)
    response = platform.client.delete("/api/v2/call/export", headers=api.actor.headers,
                                      params={"workspaceId": api.actor.workspace_id})
    assert response.status_code == 405 and response.headers["allow"] == "GET, HEAD"
    assert response.json()["success"] is False
    assert "callId" in api("GET", "/call/not-a-uuid", 400)["message"]


def test_a_signing_secret_needs_a_json_body_even_an_empty_one(platform):
    api = owner(platform)
    url, params = "/api/v2/webhooks/signing-secrets", {"workspaceId": api.actor.workspace_id}
    assert platform.client.post(url, params=params, headers=api.actor.headers, json={}).status_code == 200
    for extra in ({}, {"headers": {"Content-Type": "text/plain"}, "content": b"hello"}):
        response = platform.client.post(url, params=params, headers={**api.actor.headers, **extra.get("headers", {})},
                                        content=extra.get("content"))
        assert response.status_code in (400, 415) and response.json()["success"] is False, response.text


@pytest.mark.parametrize("started, ended", [("9999-12-31T23:59:59-12:00", "9999-12-31T23:59:59-12:00"),
                                            ("0001-01-01T00:00:00+14:00", "0001-01-01T00:00:00+14:00")])
def test_moments_outside_the_years_1_to_9999_in_utc_are_refused(platform, started, ended):
    api = owner(platform)
    body = factories.report(api.actor, startedAt=started, endedAt=ended)
    assert "years 1 to 9999" in post_report(platform, api.actor, body, expect=400)["message"]
    assert "years 1 to 9999" in api("GET", "/call", 400, since=started)["message"]
