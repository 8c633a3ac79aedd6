"""Outbound webhooks over HTTP, delivered for real to a local receiver (tests/webhook_receiver.py):
subscriptions and their rules, signatures the receiver verifies, retries on failures and timeouts,
rotation with both signatures, test-fire, the delivery log, redelivery and the outbox's atomicity."""
from __future__ import annotations

import logging
import time

import orjson
import pytest

from models.webhooks import outbox
from tests.support import factories
from tests.support.client import Api, owner
from tests.support.reports import post_report
from tests.support.webhook_receiver import Answer, Receiver

EVENT = "end-of-call-report"


@pytest.fixture
def settings_overrides():
    # The receiver listens on 127.0.0.1 over http; retries come fast and attempts end within 1 s.
    return {"webhook_allow_http": True, "webhook_allow_private_addresses": True, "webhook_workers": 2,
            "webhook_retry_base_s": 0.2, "webhook_timeout_s": 1.0}


@pytest.fixture
def receiver():
    receiver = Receiver()
    yield receiver
    receiver.close()


def subscribe(api: Api, url: str, expect: int = 200, **body) -> dict:
    return api("POST", "/webhooks/subscriptions", expect, json={"url": url, "events": [EVENT], **body})


def wait_for_event(api: Api, event_id: str, status: str, timeout_s: float = 15.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        event = api("GET", f"/webhooks/events/{event_id}")["event"]
        if event["status"] == status:
            return event
        assert time.monotonic() < deadline, f"event still {event['status']} after {timeout_s} s: {event}"
        time.sleep(0.05)


def only_event(api: Api, **filters) -> dict:
    events = api("GET", "/webhooks/events", **filters)["events"]
    assert len(events) == 1, events
    return events[0]


def test_a_subscription_is_created_with_its_secret_shown_once_then_listed_updated_and_deleted(platform, receiver):
    api = owner(platform)
    made = subscribe(api, receiver.url, description="CRM sync")
    secret, subscription = made["signingSecret"], made["subscription"]
    assert secret.startswith("whsec_") and len(secret) > 40
    assert subscription["url"] == receiver.url and subscription["events"] == [EVENT]
    assert subscription["enabled"] is True and subscription["disabledReason"] is None
    listed = api("GET", "/webhooks/subscriptions")
    assert listed["pagination"] == {"total": 1, "limit": 20, "offset": 0}
    read = api("GET", f"/webhooks/subscriptions/{subscription['id']}")["subscription"]
    assert read == subscription
    for shown in (listed, read):
        assert secret not in orjson.dumps(shown).decode()
    updated = api("PATCH", f"/webhooks/subscriptions/{subscription['id']}",
                  json={"description": None, "url": receiver.url + "/v2"})["subscription"]
    assert updated["description"] is None and updated["url"] == receiver.url + "/v2"
    api("DELETE", f"/webhooks/subscriptions/{subscription['id']}")
    api("GET", f"/webhooks/subscriptions/{subscription['id']}", 404)
    api("DELETE", f"/webhooks/subscriptions/{subscription['id']}", 404)
    other = owner(platform)
    other_id = subscribe(other, receiver.url)["subscription"]["id"]
    api("GET", f"/webhooks/subscriptions/{other_id}", 404)  # another workspace's


def test_bad_urls_and_event_lists_are_400_naming_the_rule(platform, receiver):
    api = owner(platform)
    for url, words in [("hooks.example.com/calls", "url"), ("ftp://hooks.example.com", "url"),
                       ("https://user:pw@hooks.example.com/", "user name"), ("https:///path", "host"),
                       ("https://hooks.example.com/#x", "fragment"), ("https://hooks.example.com:99999/", "absolute"),
                       ("https://" + "a" * 2040 + ".com/", "2048")]:
        error = subscribe(api, url, 400)
        assert words in error["message"] and "url" in error["message"], (url, error)
    assert "events" in subscribe(api, receiver.url, 400, events=[])["message"]
    assert "events" in subscribe(api, receiver.url, 400, events=["call-started"])["message"]


@pytest.mark.parametrize("settings_overrides", [{"webhook_allow_private_addresses": False}])
def test_ipv6_urls_that_carry_a_private_ipv4_are_400_when_private_addresses_are_not_allowed(platform):
    api = owner(platform)
    for url in ("https://[::127.0.0.1]/hook", "https://[64:ff9b::7f00:1]/hook", "https://[2002:7f00:1::]/hook",
                "https://[2001:0:808:808::80ff:fffe]/hook"):
        error = subscribe(api, url, 400)
        assert error["code"] == "validation_failed" and "url" in error["message"], (url, error)
        assert "WEBHOOK_ALLOW_PRIVATE_ADDRESSES" in error["message"], (url, error)
    # The same forms carrying a public IPv4 (8.8.8.8) are registered.
    for url in ("https://[64:ff9b::808:808]/hook", "https://[2002:808:808::]/hook"):
        assert subscribe(api, url)["subscription"]["url"] == url


def test_a_workspace_holds_at_most_100_subscriptions(platform, receiver):
    api = owner(platform)
    for _ in range(100):
        subscribe(api, receiver.url)
    assert "100" in subscribe(api, receiver.url, 409)["message"]


def test_a_recorded_call_is_posted_signed_with_the_spec_payload(platform, receiver):
    api = owner(platform)
    made = subscribe(api, receiver.url)
    receiver.secrets = [made["signingSecret"]]
    report = factories.report(api.actor, tags=["vip"], agentId=None)
    post_report(platform, api.actor, report)
    (got,) = receiver.wait_for(1)
    assert got.verified_with == [0]
    assert got.headers["content-type"] == "application/json"
    body = orjson.loads(got.body)
    for key in ("callId", "workspaceId", "durationMs", "status", "callEndReasonCategory", "customer", "startedAt",
                "endedAt", "recordingUrl", "summary", "endedReason", "transcript"):
        assert body[key] == report[key], key
    assert body["type"] == EVENT and body["timestamp"] != report["timestamp"] and body["timestamp"].endswith("Z")
    event = wait_for_event(api, got.headers["webhook-id"], "delivered")
    assert event["callId"] == report["callId"] and event["attempts"] == 1 and event["type"] == EVENT
    (attempt,) = api("GET", f"/webhooks/events/{event['id']}/deliveries")["deliveries"]
    assert attempt["succeeded"] is True and attempt["statusCode"] == 200 and attempt["responseBody"] == "ok"
    # A redelivery of the same report records nothing new, so sends nothing new.
    post_report(platform, api.actor, report)
    assert api("GET", "/webhooks/events")["pagination"]["total"] == 1


def test_a_call_deleted_while_its_event_is_sent_drops_the_outcome_quietly_and_leaves_nothing(
        platform, receiver, caplog):
    api = owner(platform)
    made = subscribe(api, receiver.url)
    receiver.script = [Answer(200, delay_s=0.5)]  # the call is deleted while the receiver takes its time
    report = factories.report(api.actor)
    with caplog.at_level(logging.INFO):
        post_report(platform, api.actor, report)
        deadline = time.monotonic() + 15
        while (event := only_event(api))["attempts"] == 0:  # not claimed yet
            assert time.monotonic() < deadline, event
            time.sleep(0.02)
        api("DELETE", f"/call/{report['callId']}")
        receiver.wait_for(1)
        # The worker says what became of the attempt's outcome, in a line naming the event.
        while not [r for r in caplog.records if r.name == "api.webhooks" and event["id"] in r.getMessage()]:
            assert time.monotonic() < deadline, "the worker never finished the attempt"
            time.sleep(0.02)
    errors = [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []
    assert api("GET", "/webhooks/events")["pagination"]["total"] == 0
    assert api("GET", f"/webhooks/subscriptions/{made['subscription']['id']}/deliveries")["pagination"]["total"] == 0


def test_failures_and_timeouts_are_retried_with_the_same_id_until_one_succeeds(platform, receiver):
    api = owner(platform)
    made = subscribe(api, receiver.url)
    receiver.secrets = [made["signingSecret"]]
    receiver.script = [Answer(500, body=b"down"), Answer(200, delay_s=2.0), Answer(204, body=b"")]
    post_report(platform, api.actor, factories.report(api.actor))
    first, second, third = receiver.wait_for(3)
    assert {r.headers["webhook-id"] for r in (first, second, third)} == {first.headers["webhook-id"]}
    assert all(r.verified_with == [0] for r in (first, second, third))
    # Backoff with full jitter after n failures: at most 0.2 * 2^n s, plus a poll (0.5 s) and slack.
    assert second.started - first.ended < 0.4 + 0.5 + 1.0
    assert third.started - (second.started + 1.0) < 0.8 + 0.5 + 1.0
    event = wait_for_event(api, first.headers["webhook-id"], "delivered")
    assert event["attempts"] == 3 and event["lastError"] is None
    log = api("GET", f"/webhooks/events/{event['id']}/deliveries")["deliveries"]
    assert [a["attempt"] for a in log] == [3, 2, 1]  # newest first
    assert (log[2]["succeeded"], log[2]["statusCode"], log[2]["responseBody"]) == (False, 500, "down")
    assert log[1]["succeeded"] is False and log[1]["statusCode"] is None and "within 1 s" in log[1]["error"]
    assert (log[0]["succeeded"], log[0]["statusCode"]) == (True, 204)
    by_subscription = api("GET", f"/webhooks/subscriptions/{made['subscription']['id']}/deliveries")
    assert by_subscription["pagination"]["total"] == 3
    assert api("GET", f"/webhooks/subscriptions/{made['subscription']['id']}")["subscription"]["failingSince"] is None


def test_redirects_are_not_followed_and_only_1_kb_of_an_answer_is_kept(platform, receiver):
    api = owner(platform)
    subscribe(api, receiver.url)
    receiver.script = [Answer(302, headers={"Location": receiver.url + "/elsewhere"}),
                       Answer(200, body=b"\x00" + b"x" * 5000)]
    post_report(platform, api.actor, factories.report(api.actor))
    first, second = receiver.wait_for(2)
    assert first.path == second.path == "/hook"
    event = wait_for_event(api, first.headers["webhook-id"], "delivered")
    failed, succeeded = reversed(api("GET", f"/webhooks/events/{event['id']}/deliveries")["deliveries"])
    assert failed["statusCode"] == 302 and "redirects are not followed" in failed["error"]
    assert len(succeeded["responseBody"]) == 1024 and succeeded["responseBody"].startswith("\ufffdxxx")


def test_a_rotated_secret_signs_beside_the_new_one_for_its_grace_period(platform, receiver):
    api = owner(platform)
    made = subscribe(api, receiver.url)
    path = f"/webhooks/subscriptions/{made['subscription']['id']}/rotate-secret"
    rotated = api("POST", path, json={})
    old, new = made["signingSecret"], rotated["signingSecret"]
    assert new != old and rotated["subscription"]["previousSecretExpiresAt"] is not None
    receiver.secrets = [old, new]
    post_report(platform, api.actor, factories.report(api.actor))
    (got,) = receiver.wait_for(1)
    assert got.verified_with == [0, 1] and len(got.headers["webhook-signature"].split(" ")) == 2
    newest = api("POST", path, json={"graceSeconds": 0})["signingSecret"]
    receiver.secrets = [old, new, newest]
    post_report(platform, api.actor, factories.report(api.actor))
    (_, got) = receiver.wait_for(2)
    assert got.verified_with == [2] and len(got.headers["webhook-signature"].split(" ")) == 1
    api("POST", path, 400, json={"graceSeconds": 604801})


def test_test_fire_sends_a_signed_ping_and_answers_with_the_receivers_status(platform, receiver):
    api = owner(platform)
    made = subscribe(api, receiver.url, enabled=False)
    receiver.secrets = [made["signingSecret"]]
    path = f"/webhooks/subscriptions/{made['subscription']['id']}/test"
    result = api("POST", path)
    (got,) = receiver.wait_for(1)
    assert result["delivered"] is True and result["statusCode"] == 200 and result["latencyMs"] > 0
    assert got.verified_with == [0] and orjson.loads(got.body)["type"] == "ping"
    assert result["event"]["type"] == "ping" and result["event"]["status"] == "delivered"
    receiver.script = [Answer(503)]
    refused = api("POST", path)
    assert refused["delivered"] is False and refused["statusCode"] == 503 and "503" in refused["error"]
    api("POST", f"/webhooks/events/{refused['event']['id']}/redeliver", 400)
    # Nothing listening: the reason, no status.
    receiver.close()
    gone = api("POST", path)
    assert gone["delivered"] is False and gone["statusCode"] is None and "connection" in gone["error"].lower()
    # Pings never count towards disabling the subscription.
    assert api("GET", f"/webhooks/subscriptions/{made['subscription']['id']}")["subscription"]["failingSince"] is None
    assert api("GET", f"/webhooks/subscriptions/{made['subscription']['id']}/deliveries")["pagination"]["total"] == 3
    api("POST", "/webhooks/subscriptions/2a3b4c5d-6e7f-4a8b-9c0d-1e2f3a4b5c6d/test", 404)


def test_a_disabled_subscription_gets_no_events_and_its_waiting_ones_resume_when_enabled(platform, receiver):
    api = owner(platform)
    made = subscribe(api, receiver.url, enabled=False)
    sub_path = f"/webhooks/subscriptions/{made['subscription']['id']}"
    post_report(platform, api.actor, factories.report(api.actor))
    assert api("GET", "/webhooks/events")["events"] == []
    api("PATCH", sub_path, json={"enabled": True})
    receiver.script = [Answer(500)] * 100  # the receiver is down: the event waits for its retry
    post_report(platform, api.actor, factories.report(api.actor))
    receiver.wait_for(1)
    api("PATCH", sub_path, json={"enabled": False})
    event = only_event(api)
    assert event["status"] == "paused"
    assert api("POST", f"/webhooks/events/{event['id']}/redeliver", 409)["message"].startswith("The event's subscription is disabled")
    receiver.script = []
    api("PATCH", sub_path, json={"enabled": True})
    wait_for_event(api, event["id"], "delivered")


def test_an_event_is_redelivered_by_hand_with_its_id(platform, receiver):
    api = owner(platform)
    subscribe(api, receiver.url)
    post_report(platform, api.actor, factories.report(api.actor))
    (first,) = receiver.wait_for(1)
    event_id = first.headers["webhook-id"]
    wait_for_event(api, event_id, "delivered")
    again = api("POST", f"/webhooks/events/{event_id}/redeliver")["event"]
    assert again["status"] == "pending"
    (_, second) = receiver.wait_for(2)
    assert second.headers["webhook-id"] == event_id
    assert wait_for_event(api, event_id, "delivered")["attempts"] == 2
    api("POST", "/webhooks/events/8c9d0e1f-2a3b-4c5d-8e6f-7a8b9c0d1e2f/redeliver", 404)
    api("GET", "/webhooks/events/not-a-uuid", 400)


def test_events_are_listed_newest_first_and_filtered(platform, receiver):
    api = owner(platform)
    receiver.script = [Answer(500)] * 100
    first = subscribe(api, receiver.url)["subscription"]["id"]
    second = subscribe(api, receiver.url + "/2")["subscription"]["id"]
    reports = [factories.report(api.actor) for _ in range(3)]
    for report in reports:
        post_report(platform, api.actor, report)
    everything = api("GET", "/webhooks/events", limit=2, offset=1)
    assert everything["pagination"] == {"total": 6, "limit": 2, "offset": 1}
    assert api("GET", "/webhooks/events", subscriptionId=first)["pagination"]["total"] == 3
    about = api("GET", "/webhooks/events", callId=reports[0]["callId"])["events"]
    assert {e["subscriptionId"] for e in about} == {first, second}
    assert api("GET", "/webhooks/events", status="delivered")["events"] == []
    api("GET", "/webhooks/events", 400, status="lost")
    detail = api("GET", f"/webhooks/events/{about[0]['id']}")["event"]
    assert detail["payload"]["callId"] == reports[0]["callId"] and detail["payload"]["type"] == EVENT


def test_no_call_is_recorded_without_its_events(platform, receiver, monkeypatch):
    api = owner(platform)
    subscribe(api, receiver.url)

    def broken(**kwargs):
        raise RuntimeError("the outbox is broken")

    monkeypatch.setattr(outbox, "enqueue_call", broken)
    report = factories.report(api.actor)
    post_report(platform, api.actor, report, expect=500)
    api("GET", f"/call/{report['callId']}", 404)
    monkeypatch.undo()
    post_report(platform, api.actor, report)
    assert only_event(api)["callId"] == report["callId"]
    # Deleting the call deletes its events: they carry its personal data.
    api("DELETE", f"/call/{report['callId']}")
    assert api("GET", "/webhooks/events")["events"] == []


def test_deleting_a_subscription_deletes_its_events_and_log(platform, receiver):
    api = owner(platform)
    sub = subscribe(api, receiver.url)["subscription"]["id"]
    post_report(platform, api.actor, factories.report(api.actor))
    event_id = receiver.wait_for(1)[0].headers["webhook-id"]
    wait_for_event(api, event_id, "delivered")
    api("DELETE", f"/webhooks/subscriptions/{sub}")
    api("GET", f"/webhooks/events/{event_id}", 404)
    api("GET", f"/webhooks/events/{event_id}/deliveries", 404)
    api("GET", f"/webhooks/subscriptions/{sub}/deliveries", 404)
