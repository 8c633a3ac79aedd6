"""Live calls over HTTP: registration (idempotent on callId, 409 on other fields or a recorded
call), every status move of the table and every illegal one, timestamps and history, the live
list, the end-of-call-report completing a registered call (one call, one debit), control
requests (transfer, resume, messages) pushed by signed webhook to a runtime that acknowledges them
and pulled by claim, their legal states, and another workspace's calls and requests (404). On
PostgreSQL: two claimers at once get disjoint requests, two moves from one status at once succeed
once."""
from __future__ import annotations

import time

import orjson
import pytest

from models.live_calls import lifecycle
from tests.support import factories
from tests.support.client import Api, owner
from tests.support.reports import post_report
from tests.support.threads import run_threads
from tests.support.webhook_receiver import Receiver

CUSTOMER, OURS = "+14155550123", "+14155550100"
CALL_FIELDS = {"id", "callId", "workspaceId", "direction", "entityType", "entityId", "versionId", "from", "to",
               "campaignId", "contactId", "status", "statusReason", "statusAt", "registeredAt", "ringingAt",
               "answeredAt", "endedAt", "updatedAt", "recordedCallId"}


@pytest.fixture
def settings_overrides():
    # The fake runtime listens on 127.0.0.1 over http.
    return {"webhook_allow_http": True, "webhook_allow_private_addresses": True, "webhook_workers": 1,
            "webhook_retry_base_s": 0.2, "webhook_timeout_s": 1.0}


class Runtime:
    """A workspace's owner, an agent with its published version, and the call runtime's requests."""

    def __init__(self, platform):
        self.api = owner(platform)
        self.agent = factories.agent(self.api.actor)
        self.version = factories.live_version(self.api.actor, self.agent)

    def body(self, call_id: str, **fields) -> dict:
        body = {"callId": call_id, "direction": "inbound", "entityType": "agent", "entityId": self.agent,
                "versionId": self.version, "from": CUSTOMER, "to": OURS}
        body.update(fields)
        return {key: value for key, value in body.items() if value is not None}

    def register(self, call_id: str, expect: int = 200, **fields) -> dict:
        return self.api("POST", "/call/live", expect, json=self.body(call_id, **fields))

    def move(self, call_id: str, status: str, expect: int = 200, **fields) -> dict:
        return self.api("POST", f"/call/{call_id}/status", expect, json={"status": status, **fields})

    def call_in(self, status: str, call_id: str | None = None) -> str:
        return factories.live_call(self.api.actor, self.agent, status=status, call_id=call_id)


# --- registration ---------------------------------------------------------------------------------

def test_a_call_is_registered_then_read_and_registered_again_with_the_same_fields_changes_nothing(platform):
    rt = Runtime(platform)
    made = rt.register("call_abc.1:x-Y")
    assert made["created"] is True and set(made["call"]) == CALL_FIELDS
    call = made["call"]
    assert {k: call[k] for k in ("callId", "direction", "entityType", "entityId", "versionId", "from", "to",
                                 "status", "statusAt", "ringingAt", "answeredAt", "endedAt", "recordedCallId")} == {
        "callId": "call_abc.1:x-Y", "direction": "inbound", "entityType": "agent", "entityId": rt.agent,
        "versionId": rt.version, "from": CUSTOMER, "to": OURS, "status": "queued", "statusAt": None,
        "ringingAt": None, "answeredAt": None, "endedAt": None, "recordedCallId": None}
    assert call["workspaceId"] == rt.api.actor.workspace_id
    again = rt.register("call_abc.1:x-Y")
    assert again == {"created": False, "call": call}
    # Numbers are kept in E.164 whichever way they were written, so the same number is the same field.
    assert rt.register("call_abc.1:x-Y", **{"from": "+1 (415) 555-0123"})["created"] is False
    assert rt.api("GET", "/call/call_abc.1:x-Y/status") == {"call": call, "history": []}


def test_registering_a_callid_again_with_other_fields_is_409_naming_them(platform):
    rt = Runtime(platform)
    rt.register("call_1")
    error = rt.register("call_1", 409, direction="outbound", to="+14155550199")
    assert error["code"] == "conflict" and error["result"] == {"callId": "call_1", "differingFields": ["direction", "to"]}
    assert "direction, to" in error["message"]
    assert rt.api("GET", "/call/call_1/status")["call"]["direction"] == "inbound"


def test_a_callid_the_workspace_recorded_a_call_under_is_409_and_another_workspaces_is_free(platform):
    rt = Runtime(platform)
    recorded = factories.call(rt.api.actor)
    error = rt.register(recorded, 409)
    assert "recorded" in error["message"] and recorded in error["message"]
    other = Runtime(platform)
    assert other.register(recorded)["created"] is True


def test_the_callid_is_1_to_128_characters_of_the_runtimes_alphabet(platform):
    rt = Runtime(platform)
    assert rt.register("c" * 128)["call"]["callId"] == "c" * 128
    assert rt.register("7")["call"]["callId"] == "7"
    for bad in ("c" * 129, "", "-leading", "has space", "a/b", "é"):
        assert "callId" in rt.register(bad, 400)["message"], bad


def test_the_version_numbers_campaign_and_contact_must_be_the_workspaces(platform):
    rt = Runtime(platform)
    other_agent = factories.agent(rt.api.actor, name="other")
    other_version = factories.live_version(rt.api.actor, other_agent)
    foreign = Runtime(platform)
    for fields in ({"versionId": other_version}, {"versionId": foreign.version},
                   {"entityType": "workflow"}, {"entityId": foreign.agent}):
        assert rt.register("call_v", 400, **fields)["message"].startswith("versionId: no version"), fields
    assert rt.register("call_v", 400, **{"from": "12345"})["message"].startswith("from ")
    assert rt.register("call_v", 400, to="+999999")["message"].startswith("to ")
    campaign, contact, _ = factories.claimed_attempt(rt.api.actor)
    made = rt.register("call_c", direction="outbound", campaignId=campaign, contactId=contact)["call"]
    assert (made["campaignId"], made["contactId"]) == (campaign, contact)
    assert "contactId needs campaignId" in rt.register("call_d", 400, contactId=contact)["message"]
    f_campaign, f_contact, _ = factories.claimed_attempt(foreign.api.actor)
    assert rt.register("call_d", 400, campaignId=f_campaign)["message"].startswith("campaignId: no campaign")
    assert rt.register("call_d", 400, campaignId=campaign, contactId=f_contact)["message"].startswith(
        "contactId: no contact")
    rt.api("GET", "/call/call_v/status", 404)
    rt.api("GET", "/call/call_d/status", 404)


# --- status moves -------------------------------------------------------------------------------

@pytest.mark.parametrize("current", lifecycle.STATUSES)
def test_every_move_of_the_table_succeeds_and_every_other_is_409_naming_the_status_and_the_moves(platform, current):
    rt = Runtime(platform)
    for wanted in lifecycle.STATUSES:
        call_id = rt.call_in(current)
        before = rt.api("GET", f"/call/{call_id}/status")
        if wanted == current:
            assert rt.move(call_id, wanted) == {"call": before["call"], "moved": False}, wanted
        elif wanted in lifecycle.MOVES[current]:
            moved = rt.move(call_id, wanted, reason="a reason")
            assert moved["moved"] is True and moved["call"]["status"] == wanted, wanted
            assert moved["call"]["statusReason"] == "a reason"
            history = rt.api("GET", f"/call/{call_id}/status")["history"]
            assert [(m["from"], m["to"], m["reason"]) for m in history[-1:]] == [(current, wanted, "a reason")]
        else:
            error = rt.move(call_id, wanted, 409)
            allowed = list(lifecycle.MOVES[current])
            assert error["code"] == "conflict" and error["result"] == {"status": current, "allowed": allowed}
            assert error["message"].startswith(f"The call is {current};"), error
            assert all(status in error["message"] for status in allowed)
            assert rt.api("GET", f"/call/{call_id}/status") == before


def test_the_table_is_the_one_the_contract_states():
    assert lifecycle.MOVES == {"queued": ("ringing", "ended"), "ringing": ("in-progress", "ended"),
                               "in-progress": ("forwarding", "ended"), "forwarding": ("in-progress", "ended"),
                               "ended": ()}


def test_moves_stamp_their_times_the_first_answer_stays_and_the_history_keeps_every_move(platform):
    rt = Runtime(platform)
    rt.register("call_t")
    rt.move("call_t", "ringing", at="2025-01-01T00:00:00Z")
    assert rt.move("call_t", "ringing", at="2025-01-01T00:00:05Z")["moved"] is False  # repeated: the first stays
    answered = rt.move("call_t", "in-progress", at="2025-01-01T01:00:05+01:00")["call"]
    assert (answered["ringingAt"], answered["answeredAt"]) == ("2025-01-01T00:00:00.000Z", "2025-01-01T00:00:05.000Z")
    rt.move("call_t", "forwarding", at="2025-01-01T00:01:00Z", reason="to billing")
    again = rt.move("call_t", "in-progress", at="2025-01-01T00:02:00Z")["call"]
    assert again["answeredAt"] == "2025-01-01T00:00:05.000Z" and again["statusAt"] == "2025-01-01T00:02:00.000Z"
    ended = rt.move("call_t", "ended", at="2025-01-01T00:03:00Z", reason="customer-ended-call")["call"]
    assert ended["endedAt"] == "2025-01-01T00:03:00.000Z" and ended["statusReason"] == "customer-ended-call"
    history = rt.api("GET", "/call/call_t/status")["history"]
    assert [(m["from"], m["to"], m["at"], m["reason"]) for m in history] == [
        ("queued", "ringing", "2025-01-01T00:00:00.000Z", None),
        ("ringing", "in-progress", "2025-01-01T00:00:05.000Z", None),
        ("in-progress", "forwarding", "2025-01-01T00:01:00.000Z", "to billing"),
        ("forwarding", "in-progress", "2025-01-01T00:02:00.000Z", None),
        ("in-progress", "ended", "2025-01-01T00:03:00.000Z", "customer-ended-call")]


def test_at_may_not_run_ahead_of_the_clock_past_the_skew_nor_before_the_current_status(platform):
    rt = Runtime(platform)
    rt.register("call_a")
    far = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 120))
    near = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 30))
    assert "ahead" in rt.move("call_a", "ringing", 400, at=far)["message"]
    assert rt.move("call_a", "ringing", at=near)["moved"] is True
    error = rt.move("call_a", "in-progress", 400, at="2020-01-01T00:00:00Z")
    assert "at must not be before the call became ringing" in error["message"]
    assert "at" in rt.move("call_a", "in-progress", 400, at="2025-01-01T00:00:00")["message"]
    assert rt.api("GET", "/call/call_a/status")["call"]["status"] == "ringing"


# --- the live list -----------------------------------------------------------------------------

def test_the_list_holds_the_calls_not_ended_newest_first_filtered_by_status_and_agent(platform):
    rt = Runtime(platform)
    other_agent = factories.agent(rt.api.actor, name="other")
    ids = [rt.call_in(status) for status in ("queued", "ringing", "in-progress", "forwarding", "ended")]
    of_other = factories.live_call(rt.api.actor, other_agent, status="in-progress")
    listed = rt.api("GET", "/call/live")
    assert [c["callId"] for c in listed["calls"]] == [of_other, *reversed(ids[:4])]
    assert listed["pagination"] == {"total": 5, "limit": 20, "offset": 0}
    assert [c["callId"] for c in rt.api("GET", "/call/live", status="in-progress")["calls"]] == [of_other, ids[2]]
    assert [c["callId"] for c in rt.api("GET", "/call/live", agentId=rt.agent)["calls"]] == list(reversed(ids[:4]))
    assert rt.api("GET", "/call/live", agentId=other_agent, status="queued")["calls"] == []
    page = rt.api("GET", "/call/live", limit=2, offset=4)
    assert len(page["calls"]) == 1 and page["pagination"] == {"total": 5, "limit": 2, "offset": 4}
    assert rt.api("GET", "/call/live", offset=9)["pagination"]["total"] == 5
    assert "status" in rt.api("GET", "/call/live", 400, status="ended")["message"]
    assert Runtime(platform).api("GET", "/call/live")["calls"] == []


def test_the_customers_number_is_masked_for_a_reader_without_calls_pii(platform):
    rt = Runtime(platform)
    inbound = rt.call_in("in-progress")
    outbound = factories.live_call(rt.api.actor, rt.agent, direction="outbound", status="ringing")
    viewer = Api(platform, factories.member(rt.api.actor, "viewer"))
    shown = {c["callId"]: (c["from"], c["to"]) for c in viewer("GET", "/call/live")["calls"]}
    assert shown == {inbound: ("+*******0123", OURS), outbound: (OURS, "+*******0123")}
    assert viewer("GET", f"/call/{inbound}/status")["call"]["from"] == "+*******0123"
    assert rt.api("GET", f"/call/{inbound}/status")["call"]["from"] == CUSTOMER
    control = rt.api("POST", f"/call/{inbound}/transfer",
                     json={"destination": {"type": "number", "number": "+14155550199"}})["control"]
    assert control["request"] == {"destination": {"type": "number", "number": "+14155550199"}}
    seen = viewer("GET", f"/call/{inbound}/controls/{control['id']}")["control"]
    assert seen["request"] == {"destination": {"type": "number", "number": "+*******0199"}}


def test_the_audit_log_keeps_the_names_of_the_fields_of_numbers_and_messages_not_their_values(platform):
    rt = Runtime(platform)
    call_id = rt.register("call_audit")["call"]["callId"]
    rt.move(call_id, "ringing")
    rt.move(call_id, "in-progress")
    rt.api("POST", f"/call/{call_id}/transfer", json={"destination": {"type": "number", "number": "+14155550199"}})
    rt.api("POST", f"/call/{call_id}/messages", json={"content": "The customer's account is 12345."})
    entries = rt.api("GET", "/workspace/logs", limit=100)["logs"]
    logged = {e["operationId"]: e["changes"] for e in entries}
    assert logged["registerLiveCall"] == {"fields": sorted(rt.body(call_id))}
    assert logged["transferLiveCall"] == {"fields": ["destination"]}
    assert logged["sendLiveCallMessage"] == {"fields": ["content"]}
    text = orjson.dumps(entries).decode()
    assert CUSTOMER not in text and "0199" not in text and "12345" not in text


# --- the end-of-call-report -----------------------------------------------------------------------

def test_the_report_of_a_registered_call_ends_it_links_it_and_counts_it_once(platform):
    rt = Runtime(platform)
    report = factories.report(rt.api.actor, agentId=rt.agent)
    call_id = report["callId"]
    rt.call_in("in-progress", call_id=call_id)
    pending = rt.api("POST", f"/call/{call_id}/resume")["control"]
    post_report(platform, rt.api.actor, report)
    read = rt.api("GET", f"/call/{call_id}/status")
    assert read["call"]["status"] == "ended" and read["call"]["recordedCallId"] == call_id
    assert read["call"]["endedAt"] == report["endedAt"].replace("Z", ".000Z")
    assert read["history"][-1]["to"] == "ended"
    assert read["history"][-1]["reason"] == "end-of-call-report: customer-ended-call"
    failed = rt.api("GET", f"/call/{call_id}/controls/{pending['id']}")["control"]
    assert failed["state"] == "failed" and failed["error"] == "The call ended before the request was delivered."
    assert rt.api("GET", "/call/live")["calls"] == []
    # One call, debited once, whatever the redeliveries; a different report is still 409.
    post_report(platform, rt.api.actor, report)
    assert rt.api("GET", "/call")["pagination"]["total"] == 1
    entries = rt.api("GET", "/workspace/credits/entries", kind="call")
    assert entries["pagination"]["total"] == 1
    post_report(platform, rt.api.actor, {**report, "summary": "Another summary."}, expect=409)
    assert len(rt.api("GET", f"/call/{call_id}/status")["history"]) == 3
    # A registration after the report answers the call it was, not a 409.
    assert rt.register(call_id)["created"] is False


def test_a_report_of_a_call_the_runtime_ended_links_it_and_a_report_of_an_unregistered_call_works_as_before(platform):
    rt = Runtime(platform)
    report = factories.report(rt.api.actor)
    rt.call_in("ended", call_id=report["callId"])
    ended_at = rt.api("GET", f"/call/{report['callId']}/status")["call"]["endedAt"]
    post_report(platform, rt.api.actor, report)
    read = rt.api("GET", f"/call/{report['callId']}/status")
    assert read["call"]["recordedCallId"] == report["callId"] and read["call"]["endedAt"] == ended_at
    assert len(read["history"]) == 1
    unregistered = factories.report(rt.api.actor)
    assert post_report(platform, rt.api.actor, unregistered)["result"]["created"] is True
    rt.api("GET", f"/call/{unregistered['callId']}/status", 404)
    assert rt.api("GET", f"/call/{unregistered['callId']}")["call"]["id"] == unregistered["callId"]


# --- control requests ---------------------------------------------------------------------------

@pytest.mark.parametrize("status", lifecycle.STATUSES)
def test_control_requests_need_a_call_in_progress(platform, status):
    rt = Runtime(platform)
    call_id = rt.call_in(status)
    requests = [("transfer", {"destination": {"type": "number", "number": "+14155550199"}}), ("resume", None),
                ("messages", {"content": "Offer a discount."})]
    for path, body in requests:
        if status in ("in-progress", "forwarding"):
            assert rt.api("POST", f"/call/{call_id}/{path}", json=body)["control"]["state"] == "pending"
        else:
            error = rt.api("POST", f"/call/{call_id}/{path}", 409, json=body)
            assert error["message"].startswith(f"The call is {status};") and error["result"] == {"status": status}
    total = rt.api("GET", f"/call/{call_id}/controls")["pagination"]["total"]
    assert total == (3 if status in ("in-progress", "forwarding") else 0)


def test_a_transfer_goes_to_a_number_or_an_agent_of_the_workspace(platform):
    rt = Runtime(platform)
    call_id = rt.call_in("in-progress")
    other = Runtime(platform)
    to_number = rt.api("POST", f"/call/{call_id}/transfer",
                       json={"destination": {"type": "number", "number": "+1 415 555 0199"}})["control"]
    assert to_number["kind"] == "transfer" and to_number["request"]["destination"]["number"] == "+14155550199"
    to_agent = rt.api("POST", f"/call/{call_id}/transfer", json={"destination": {"type": "agent",
                                                                                  "agentId": rt.agent}})["control"]
    assert to_agent["request"] == {"destination": {"type": "agent", "agentId": rt.agent}}
    for destination, words in [({"type": "agent", "agentId": other.agent}, "destination.agentId: no agent"),
                               ({"type": "agent"}, "destination.agentId"),
                               ({"type": "number", "number": "555"}, "destination.number"),
                               ({"type": "number"}, "destination.number")]:
        assert words in rt.api("POST", f"/call/{call_id}/transfer", 400,
                               json={"destination": destination})["message"], destination
    assert rt.api("GET", f"/call/{call_id}/controls")["pagination"]["total"] == 2


def test_a_message_is_1_to_2000_characters_once_trimmed_as_system_by_default(platform):
    rt = Runtime(platform)
    call_id = rt.call_in("forwarding")
    made = rt.api("POST", f"/call/{call_id}/messages", json={"content": "  Offer a discount.\n "})["control"]
    assert made["kind"] == "message" and made["request"] == {"role": "system", "content": "Offer a discount."}
    assert rt.api("POST", f"/call/{call_id}/messages", json={"role": "assistant", "content": "x" * 2000})[
        "control"]["request"] == {"role": "assistant", "content": "x" * 2000}
    assert "content" in rt.api("POST", f"/call/{call_id}/messages", 400, json={"content": "x" * 2001})["message"]
    assert rt.api("POST", f"/call/{call_id}/messages", 400, json={"content": " \n "})["message"] == \
        "content must be 1 to 2000 characters once trimmed; 0 given."
    assert "role" in rt.api("POST", f"/call/{call_id}/messages", 400, json={"role": "tool", "content": "x"})["message"]


def test_requests_are_listed_newest_first_read_one_by_one_and_filtered_by_state(platform):
    rt = Runtime(platform)
    call_id = rt.call_in("in-progress")
    ids = [factories.control(rt.api.actor, call_id) for _ in range(3)]
    rt.api("POST", f"/call/{call_id}/controls/{ids[0]}/ack", json={"state": "done"})
    listed = rt.api("GET", f"/call/{call_id}/controls")
    assert [c["id"] for c in listed["controls"]] == list(reversed(ids))
    assert [c["id"] for c in rt.api("GET", f"/call/{call_id}/controls", state="done")["controls"]] == [ids[0]]
    assert rt.api("GET", f"/call/{call_id}/controls", state="pending")["pagination"]["total"] == 2
    one = rt.api("GET", f"/call/{call_id}/controls/{ids[1]}")["control"]
    assert one == listed["controls"][1] and one["createdBy"] == rt.api.actor.user_id
    # A request is read through its own call only.
    second = rt.call_in("in-progress")
    rt.api("GET", f"/call/{second}/controls/{ids[1]}", 404)
    rt.api("GET", "/call/no_such_call/controls", 404)


@pytest.mark.parametrize("current", lifecycle.CONTROL_STATES)
def test_every_acknowledgement_of_the_table_succeeds_and_every_other_is_409(platform, current):
    rt = Runtime(platform)
    call_id = rt.call_in("in-progress")
    path = {"pending": [], "delivered": ["delivered"], "done": ["done"], "failed": ["failed"]}[current]
    for wanted in ("delivered", "done", "failed"):
        control_id = factories.control(rt.api.actor, call_id)
        for state in path:
            rt.api("POST", f"/call/{call_id}/controls/{control_id}/ack", json={"state": state})
        before = rt.api("GET", f"/call/{call_id}/controls/{control_id}")["control"]
        ack = f"/call/{call_id}/controls/{control_id}/ack"
        if wanted == current:
            assert rt.api("POST", ack, json={"state": wanted}) == {"control": before, "changed": False}
        elif wanted in lifecycle.CONTROL_MOVES[current]:
            body = {"state": wanted, **({"error": " Busy line. "} if wanted == "failed" else {})}
            after = rt.api("POST", ack, json=body)
            assert after["changed"] is True and after["control"]["state"] == wanted
            assert after["control"]["deliveredAt"] is not None
            assert (after["control"]["completedAt"] is not None) == (wanted != "delivered")
            assert after["control"]["error"] == ("Busy line." if wanted == "failed" else None)
        else:
            error = rt.api("POST", ack, 409, json={"state": wanted})
            assert error["message"].startswith(f"The control request is {current};")
            assert error["result"] == {"state": current, "allowed": list(lifecycle.CONTROL_MOVES[current])}
            assert rt.api("GET", f"/call/{call_id}/controls/{control_id}")["control"] == before


def test_an_error_goes_with_failed_only(platform):
    rt = Runtime(platform)
    call_id = rt.call_in("in-progress")
    control_id = factories.control(rt.api.actor, call_id)
    ack = f"/call/{call_id}/controls/{control_id}/ack"
    assert rt.api("POST", ack, 400, json={"state": "done", "error": "x"})["message"] == \
        "error goes with state failed only."
    assert "error" in rt.api("POST", ack, 400, json={"state": "failed", "error": "x" * 1001})["message"]
    assert "state" in rt.api("POST", ack, 400, json={"state": "pending"})["message"]
    assert rt.api("POST", ack, json={"state": "failed"})["control"]["error"] is None


def test_a_claim_takes_the_oldest_pending_requests_once_marked_delivered(platform):
    rt = Runtime(platform)
    first, second = rt.call_in("in-progress"), rt.call_in("forwarding")
    ids = [factories.control(rt.api.actor, call_id) for call_id in (first, second, first)]
    other = Runtime(platform)
    factories.control(other.api.actor, other.call_in("in-progress"))
    claimed = rt.api("POST", "/call/controls/claim", json={"count": 2})["controls"]
    assert [(c["id"], c["callId"], c["state"]) for c in claimed] == [(ids[0], first, "delivered"),
                                                                      (ids[1], second, "delivered")]
    assert all(c["deliveredAt"] for c in claimed)
    assert [c["id"] for c in rt.api("POST", "/call/controls/claim", json={})["controls"]] == [ids[2]]
    assert rt.api("POST", "/call/controls/claim", json={"count": 100})["controls"] == []
    assert "count" in rt.api("POST", "/call/controls/claim", 400, json={"count": 101})["message"]
    assert "count" in rt.api("POST", "/call/controls/claim", 400, json={"count": 0})["message"]
    assert len(other.api("POST", "/call/controls/claim", json={})["controls"]) == 1
    # A claimed request is acknowledged done; one left pending when the call ends fails, a delivered one stays.
    rt.api("POST", f"/call/{first}/controls/{ids[0]}/ack", json={"state": "done"})
    late = factories.control(rt.api.actor, second)
    rt.move(second, "ended")
    states = {c["id"]: c["state"] for c in rt.api("GET", f"/call/{second}/controls")["controls"]}
    assert states == {ids[1]: "delivered", late: "failed"}


def test_a_runtime_subscribed_to_call_control_gets_signed_events_and_acknowledges_them(platform):
    rt = Runtime(platform)
    receiver = Receiver()
    try:
        made = rt.api("POST", "/webhooks/subscriptions", json={"url": receiver.url, "events": ["call.control"]})
        receiver.secrets = [made["signingSecret"]]
        rt.api("POST", "/webhooks/subscriptions", json={"url": receiver.url + "/calls",
                                                        "events": ["end-of-call-report"]})
        call_id = rt.call_in("in-progress")
        control = rt.api("POST", f"/call/{call_id}/transfer",
                         json={"destination": {"type": "number", "number": "+14155550199"}})["control"]
        (got,) = receiver.wait_for(1)
        assert got.verified_with == [0] and got.path == "/hook"
        event = orjson.loads(got.body)
        assert event.pop("timestamp").endswith("Z")  # when it was sent, as every outbound event says
        assert event == {"type": "call.control", "workspaceId": rt.api.actor.workspace_id, "callId": call_id,
                         "controlId": control["id"], "kind": "transfer",
                         "request": {"destination": {"type": "number", "number": "+14155550199"}},
                         "createdAt": control["createdAt"]}
        # The runtime acknowledges what it was sent, then does it.
        ack = f"/call/{event['callId']}/controls/{event['controlId']}/ack"
        assert rt.api("POST", ack, json={"state": "delivered"})["control"]["state"] == "delivered"
        assert rt.api("POST", ack, json={"state": "done"})["control"]["state"] == "done"
        assert rt.api("POST", "/call/controls/claim", json={})["controls"] == []
        events = rt.api("GET", "/webhooks/events")["events"]
        assert [(e["type"], e["callId"]) for e in events] == [("call.control", None)]
    finally:
        receiver.close()


def test_another_workspaces_calls_and_requests_are_not_found(platform):
    rt, other = Runtime(platform), Runtime(platform)
    call_id = other.call_in("in-progress")
    control_id = factories.control(other.api.actor, call_id)
    for method, path, body in [("GET", f"/call/{call_id}/status", None),
                               ("POST", f"/call/{call_id}/status", {"status": "ended"}),
                               ("POST", f"/call/{call_id}/resume", None),
                               ("POST", f"/call/{call_id}/messages", {"content": "Hello."}),
                               ("POST", f"/call/{call_id}/transfer", {"destination": {"type": "agent",
                                                                                      "agentId": rt.agent}}),
                               ("GET", f"/call/{call_id}/controls", None),
                               ("GET", f"/call/{call_id}/controls/{control_id}", None),
                               ("POST", f"/call/{call_id}/controls/{control_id}/ack", {"state": "done"})]:
        error = rt.api(method, path, 404, json=body)
        assert error["message"] == f"No live call {call_id} in this workspace.", path
    assert rt.api("POST", "/call/controls/claim", json={})["controls"] == []
    assert other.api("GET", f"/call/{call_id}/controls/{control_id}")["control"]["state"] == "pending"
    assert other.api("GET", f"/call/{call_id}/status")["call"]["status"] == "in-progress"
    # The same callId in another workspace is a call of its own.
    assert rt.register(call_id)["created"] is True


# --- concurrency (PostgreSQL: SQLite has one writer at a time) ----------------------------------------

@pytest.mark.postgres
@pytest.mark.parametrize("app_database_url", ["postgres"], indirect=True)
def test_two_claimers_at_once_get_disjoint_requests(platform):
    rt = Runtime(platform)
    calls = [rt.call_in("in-progress") for _ in range(4)]
    ids = {factories.control(rt.api.actor, calls[i % 4]) for i in range(40)}
    rounds = run_threads(2, lambda _: [c["id"] for c in rt.api("POST", "/call/controls/claim",
                                                               json={"count": 25})["controls"]])
    first, second = map(set, rounds)
    assert first.isdisjoint(second) and first | second == ids and len(first) + len(second) == 40


@pytest.mark.postgres
@pytest.mark.parametrize("app_database_url", ["postgres"], indirect=True)
def test_two_moves_of_one_call_from_the_same_status_at_once_succeed_once(platform):
    rt = Runtime(platform)
    for wanted in [("in-progress", "in-progress"), ("ended", "ended"), ("in-progress", "ended")] * 3:
        call_id = rt.call_in("ringing")
        answers = run_threads(2, lambda i: platform.client.post(
            f"/api/v2/call/{call_id}/status", params={"workspaceId": rt.api.actor.workspace_id},
            json={"status": wanted[i]}, headers=rt.api.actor.headers))
        assert all(a.status_code in (200, 409) for a in answers), [a.text for a in answers]
        history = rt.api("GET", f"/call/{call_id}/status")["history"]
        # One move left ringing; the other request was judged by the status the call had then.
        assert [m["from"] for m in history].count("ringing") == 1, history
        if wanted[0] == wanted[1]:
            assert sorted(a.json()["data"]["result"]["moved"] for a in answers) == [False, True]
            assert len(history) == 2  # queued -> ringing, then the one move


@pytest.mark.postgres
@pytest.mark.parametrize("app_database_url", ["postgres"], indirect=True)
def test_two_registrations_of_one_callid_at_once_make_one_call(platform):
    rt = Runtime(platform)
    for n in range(5):
        answers = run_threads(2, lambda _: platform.client.post(
            "/api/v2/call/live", params={"workspaceId": rt.api.actor.workspace_id}, json=rt.body(f"call_race_{n}"),
            headers=rt.api.actor.headers))
        results = [a.json()["data"]["result"] for a in answers]
        assert sorted(r["created"] for r in results) == [False, True], [a.text for a in answers]
        assert results[0]["call"] == results[1]["call"]
    assert rt.api("GET", "/call/live")["pagination"]["total"] == 5
