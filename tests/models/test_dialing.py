"""Campaign execution (models.campaigns.dialing): what a claim hands out (window, schedule, each
contact's local hours across zones and a daylight-saving change, the do-not-call list at claim time,
concurrency, attempts and retry delays), lease expiry, outcomes, settlement by a call's report,
progress and completion. A fixed clock (``now``) stands in for waiting."""
from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from models.call_recorded import settle_campaign_contact
from models.campaigns import dialing, lifecycle
from models.calls.calls import Report
from models.campaigns.tables import Campaign, CampaignAttempt, CampaignContact
from models.kernel.db import session
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.telephony.tables import SuppressedNumber
from tests.support import factories
from tests.support.threads import run_threads

# Friday 6 March 2026, 13:30 UTC: 08:30 in New York (EST, UTC-5), 14:30 in Paris, 22:30 in Tokyo.
# New York moves to EDT (UTC-4) on Sunday 8 March: on Monday 9 March, 13:30 UTC is 09:30 there.
FRIDAY = datetime(2026, 3, 6, 13, 30)
MONDAY = datetime(2026, 3, 9, 13, 30)
WEEKDAYS = {"days": ["monday", "tuesday", "wednesday", "thursday", "friday"], "start": "09:00", "end": "17:00"}


@pytest.fixture
def owner(db):
    return factories.workspace()


def claim(owner, campaign_id, count=10, at=FRIDAY, lease_s=300):
    with session():
        return dialing.claim(workspace_id=owner.workspace_id, campaign_id=campaign_id, count=count, lease_s=lease_s,
                             now=at)


def outcome(owner, campaign_id, attempt_id, result, at=FRIDAY, **options):
    with session():
        return dialing.report_outcome(workspace_id=owner.workspace_id, campaign_id=campaign_id, attempt_id=attempt_id,
                                      outcome=result, added_by=owner.user_id, now=at, **options)


def contact(contact_id):
    with session():
        return CampaignContact.get_by_id(contact_id)


def status(campaign_id):
    with session():
        return Campaign.get_by_id(campaign_id).status


def due(owner, campaign_id, count, **options):
    return factories.contact_rows(owner, campaign_id, factories.numbers(count), due_at=FRIDAY - timedelta(minutes=1), **options)


def test_a_claim_hands_out_due_contacts_as_attempts_with_the_campaign_to_dial(owner):
    campaign_id = factories.campaign_row(owner, caller_number_id=factories.phone_number(owner, "+14155550100"))
    ids = due(owner, campaign_id, 3)
    factories.phone_alias(owner, "Front desk", factories.numbers(1)[0])
    got = claim(owner, campaign_id, count=2)
    assert got.campaign.status == "running" and got.campaign.caller_number == "+14155550100"
    assert got.campaign.target_type == "agent" and got.campaign.target_version_id is not None
    first = {c.contact_id for c in got.claims}
    assert len(first) == 2 and first < set(ids) and [c.attempt for c in got.claims] == [1, 1]
    assert {c.alias for c in got.claims} <= {"Front desk", None}
    assert all((c.alias == "Front desk") == (c.contact_id == ids[0]) for c in got.claims)
    assert got.claims[0].lease_until == FRIDAY + timedelta(seconds=300)
    taken = got.claims[0].contact_id
    assert contact(taken).state == "in_progress" and contact(taken).attempts == 1
    last = claim(owner, campaign_id, count=2).claims
    assert [c.contact_id for c in last] == list(set(ids) - first) and last[0].alias == (
        "Front desk" if last[0].contact_id == ids[0] else None)
    assert claim(owner, campaign_id).claims == []


@pytest.mark.parametrize("count, lease_s", [(0, 300), (101, 300), (1, 29), (1, 3601), (True, 300)])
def test_a_count_or_lease_out_of_bounds_is_refused(owner, count, lease_s):
    campaign_id = factories.campaign_row(owner)
    with pytest.raises(InvalidInput):
        claim(owner, campaign_id, count=count, lease_s=lease_s)


def test_another_workspaces_campaign_is_not_found(owner):
    campaign_id = factories.campaign_row(factories.workspace())
    with pytest.raises(NotFound):
        claim(owner, campaign_id)


def test_the_window_starts_a_scheduled_campaign_and_its_end_completes_it(owner):
    starts, ends = FRIDAY, FRIDAY + timedelta(hours=1)
    campaign_id = factories.campaign_row(owner, status="scheduled", starts_at=starts, ends_at=ends)
    ids = due(owner, campaign_id, 3)
    before = claim(owner, campaign_id, count=1, at=starts - timedelta(microseconds=1))
    assert before.claims == [] and status(campaign_id) == "scheduled"
    assert len(claim(owner, campaign_id, count=1, at=starts, lease_s=3600).claims) == 1
    assert status(campaign_id) == "running"
    assert len(claim(owner, campaign_id, count=1, at=ends - timedelta(microseconds=1)).claims) == 1
    at_end = claim(owner, campaign_id, count=1, at=ends)
    assert at_end.claims == [] and at_end.campaign.status == "completed" == status(campaign_id)
    assert sorted(contact(i).state for i in ids) == ["in_progress", "in_progress", "pending"]  # not reached: left


@pytest.mark.parametrize("state", ["draft", "paused", "cancelled", "completed"])
def test_a_campaign_that_is_not_running_hands_out_nothing(owner, state):
    campaign_id = factories.campaign_row(owner, status=state)
    due(owner, campaign_id, 2)
    assert claim(owner, campaign_id).claims == [] and status(campaign_id) == state


def test_calling_hours_are_each_contacts_local_hours_across_a_daylight_saving_change(owner):
    campaign_id = factories.campaign_row(owner, calling_hours=WEEKDAYS)
    new_york = factories.contact_rows(owner, campaign_id, factories.numbers(2, 0), "America/New_York", FRIDAY - timedelta(days=1))
    paris = factories.contact_rows(owner, campaign_id, factories.numbers(2, 100), "Europe/Paris", FRIDAY - timedelta(days=1))
    tokyo = factories.contact_rows(owner, campaign_id, factories.numbers(2, 200), "Asia/Tokyo", FRIDAY - timedelta(days=1))
    # Friday 08:30 in New York (EST), 14:30 in Paris, 22:30 in Tokyo: Paris only.
    assert sorted(c.contact_id for c in claim(owner, campaign_id, count=1).claims) == paris[:1]
    # 09:00 sharp in New York the same day (14:00 UTC): New York opens at its start.
    at_nine = claim(owner, campaign_id, count=10, at=datetime(2026, 3, 6, 14, 0))
    assert sorted(c.contact_id for c in at_nine.claims) == sorted(new_york + paris[1:])
    campaign_2 = factories.campaign_row(owner, calling_hours=WEEKDAYS, name="after the change")
    moved = factories.contact_rows(owner, campaign_2, factories.numbers(2, 300), "America/New_York", FRIDAY - timedelta(days=1))
    assert claim(owner, campaign_2, at=FRIDAY).claims == []  # 08:30 EST
    assert claim(owner, campaign_2, at=datetime(2026, 3, 7, 15, 0)).claims == []  # Saturday
    # Monday, same UTC time: 09:30 EDT, open since the clocks went forward.
    assert sorted(c.contact_id for c in claim(owner, campaign_2, at=MONDAY).claims) == sorted(moved)
    assert contact(tokyo[0]).state == "pending"


def test_a_closed_schedule_hands_out_nothing(owner):
    weekly = {"friday": [{"start": "09:00", "end": "17:00"}]}
    schedule_id = factories.schedule(owner, time_zone="Europe/Paris", weekly_hours=weekly,
                                     exceptions=[{"date": "2026-03-13", "hours": []}])
    campaign_id = factories.campaign_row(owner, schedule_id=schedule_id)
    due(owner, campaign_id, 2)
    assert len(claim(owner, campaign_id, count=1, at=FRIDAY).claims) == 1  # 14:30 in Paris
    assert claim(owner, campaign_id, at=FRIDAY.replace(hour=16)).claims == []  # 17:00 in Paris: closed
    assert claim(owner, campaign_id, at=FRIDAY + timedelta(days=7)).claims == []  # the exception


def test_a_number_put_on_the_do_not_call_list_after_it_was_queued_is_never_dialled(owner):
    campaign_id = factories.campaign_row(owner)
    ids = due(owner, campaign_id, 3)
    listed, expired, _ = factories.numbers(3)
    factories.suppressed(owner, listed)
    factories.suppressed(owner, expired, expires_at=FRIDAY - timedelta(seconds=1), now=FRIDAY - timedelta(days=1))
    factories_other = factories.workspace()
    factories.suppressed(factories_other, factories.numbers(3)[2])  # another workspace's list: not ours
    got = claim(owner, campaign_id)
    assert sorted(c.contact_id for c in got.claims) == sorted(ids[1:])
    assert contact(ids[0]).state == "suppressed" and contact(ids[0]).attempts == 0
    with session():
        assert CampaignAttempt.select().where(CampaignAttempt.contact == ids[0]).count() == 0


def test_a_lapsed_lease_puts_the_contact_back_and_its_late_outcome_is_refused(owner):
    campaign_id = factories.campaign_row(owner, retry_delay_s=600)
    (contact_id,) = due(owner, campaign_id, 1)
    first = claim(owner, campaign_id, lease_s=60).claims[0]
    assert claim(owner, campaign_id, at=FRIDAY + timedelta(seconds=59)).claims == []
    assert claim(owner, campaign_id, at=FRIDAY + timedelta(seconds=61)).claims == []  # the retry delay
    lapsed = contact(contact_id)
    assert (lapsed.state, lapsed.last_outcome, lapsed.attempts) == ("pending", "lease_expired", 1)
    assert lapsed.next_attempt_at == FRIDAY + timedelta(seconds=661)
    with session():
        assert CampaignAttempt.get_by_id(first.attempt_id).outcome == "lease_expired"
    second = claim(owner, campaign_id, at=FRIDAY + timedelta(seconds=661)).claims[0]
    assert second.contact_id == contact_id and second.attempt == 2
    with pytest.raises(Conflict, match="lease ran out"):
        outcome(owner, campaign_id, first.attempt_id, "answered")
    assert outcome(owner, campaign_id, second.attempt_id, "answered").state == "done"


def test_a_lapsed_lease_of_the_last_attempt_fails_the_contact(owner):
    campaign_id = factories.campaign_row(owner, max_attempts=1)
    (contact_id,) = due(owner, campaign_id, 1)
    claim(owner, campaign_id, lease_s=60)
    claim(owner, campaign_id, at=FRIDAY + timedelta(seconds=61))
    assert contact(contact_id).state == "failed" and status(campaign_id) == "completed"


def test_a_renewed_lease_keeps_the_contact(owner):
    campaign_id = factories.campaign_row(owner)
    (contact_id,) = due(owner, campaign_id, 1)
    first = claim(owner, campaign_id, lease_s=60).claims[0]
    with session():
        renewed = dialing.renew(workspace_id=owner.workspace_id, campaign_id=campaign_id, attempt_id=first.attempt_id,
                                lease_s=120, now=FRIDAY + timedelta(seconds=50))
    assert renewed.lease_until == FRIDAY + timedelta(seconds=170)
    assert claim(owner, campaign_id, at=FRIDAY + timedelta(seconds=169)).claims == []
    assert contact(contact_id).state == "in_progress"


def test_no_more_contacts_are_in_progress_than_the_campaign_allows(owner):
    campaign_id = factories.campaign_row(owner, max_concurrent_calls=3)
    due(owner, campaign_id, 5)
    first = claim(owner, campaign_id, count=5).claims
    assert len(first) == 3 and claim(owner, campaign_id).claims == []
    outcome(owner, campaign_id, first[0].attempt_id, "completed")
    assert len(claim(owner, campaign_id, count=5).claims) == 1


def test_attempts_are_retried_after_the_delay_until_none_is_left(owner):
    campaign_id = factories.campaign_row(owner, max_attempts=2, retry_delay_s=600)
    (contact_id,) = due(owner, campaign_id, 1)
    first = claim(owner, campaign_id).claims[0]
    after = outcome(owner, campaign_id, first.attempt_id, "no-answer", at=FRIDAY + timedelta(seconds=30))
    assert (after.state, after.attempts, after.last_outcome) == ("pending", 1, "no-answer")
    assert claim(owner, campaign_id, at=FRIDAY + timedelta(seconds=629)).claims == []
    second = claim(owner, campaign_id, at=FRIDAY + timedelta(seconds=630)).claims[0]
    assert second.attempt == 2
    assert outcome(owner, campaign_id, second.attempt_id, "busy").state == "failed"  # no attempt left
    assert status(campaign_id) == "completed"


@pytest.mark.parametrize("result, options, state", [
    ("answered", {}, "done"), ("completed", {}, "done"), ("invalid-number", {}, "failed"),
    ("voicemail", {}, "done"), ("voicemail", {"retry": True}, "pending"), ("no-answer", {"retry": False}, "failed"),
    ("failed", {}, "pending"), ("do-not-call", {}, "done")])
def test_each_outcome_moves_the_contact_on(owner, result, options, state):
    campaign_id = factories.campaign_row(owner)
    (contact_id,) = due(owner, campaign_id, 1)
    attempt = claim(owner, campaign_id).claims[0]
    call_id = "0b7c5c7e-3a52-4a55-9f57-6f0f1d6c1a2b"
    after = outcome(owner, campaign_id, attempt.attempt_id, result, call_id=call_id, **options)
    assert (after.state, after.last_outcome, after.last_call_id) == (state, result, call_id)
    with session():
        listed = SuppressedNumber.get_or_none(SuppressedNumber.workspace == owner.workspace_id,
                                              SuppressedNumber.number == after.number)
    assert (listed is not None and listed.source == "opt-out") == (result == "do-not-call")


def test_an_outcome_reported_twice_is_answered_alike_and_another_one_is_a_conflict(owner):
    campaign_id = factories.campaign_row(owner)
    due(owner, campaign_id, 1)
    attempt = claim(owner, campaign_id).claims[0]
    first = outcome(owner, campaign_id, attempt.attempt_id, "answered")
    assert outcome(owner, campaign_id, attempt.attempt_id, "answered") == first
    with pytest.raises(Conflict, match="settled already with the outcome answered"):
        outcome(owner, campaign_id, attempt.attempt_id, "busy")
    with pytest.raises(InvalidInput, match="retry applies"):
        outcome(owner, campaign_id, attempt.attempt_id, "answered", retry=True)
    with pytest.raises(NotFound):
        outcome(owner, factories.campaign_row(owner, name="other"), attempt.attempt_id, "answered")


def test_a_contact_resolved_by_hand_closes_its_open_attempt(owner):
    campaign_id = factories.campaign_row(owner)
    ids = due(owner, campaign_id, 2)
    attempt = claim(owner, campaign_id, count=1).claims[0]
    other = (set(ids) - {attempt.contact_id}).pop()
    with session():
        resolved = dialing.resolve(workspace_id=owner.workspace_id, campaign_id=campaign_id, contact_id=attempt.contact_id,
                                   state="failed", now=FRIDAY)
        assert CampaignAttempt.get_by_id(attempt.attempt_id).outcome == "resolved-by-hand"
    assert (resolved.state, resolved.last_outcome) == ("failed", "resolved-by-hand")
    with pytest.raises(Conflict):
        outcome(owner, campaign_id, attempt.attempt_id, "answered")
    assert status(campaign_id) == "running"
    with session():
        dialing.resolve(workspace_id=owner.workspace_id, campaign_id=campaign_id, contact_id=other, state="done",
                        now=FRIDAY)
    assert status(campaign_id) == "completed"  # nobody left to try


def test_a_calls_report_settles_its_campaign_contact(owner):
    campaign_id = factories.campaign_row(owner)
    ids = due(owner, campaign_id, 2)
    claims = claim(owner, campaign_id, count=2).claims
    call_id = factories.call(owner, ended_reason="customer-did-not-answer",
                             raw={"campaignId": campaign_id, "contactId": ids[0]})
    after = contact(ids[0])
    assert (after.state, after.last_outcome, after.last_call_id) == ("pending", "no-answer", call_id)
    factories.call(owner, ended_reason="customer-ended-call",
                   raw={"campaignId": campaign_id, "contactId": ids[1], "attemptId": claims[1].attempt_id})
    assert contact(ids[1]).state == "done"
    with session():
        assert CampaignAttempt.get_by_id(claims[1].attempt_id).outcome == "completed"


def test_a_report_naming_another_workspaces_contact_changes_nothing(owner):
    stranger = factories.workspace()
    campaign_id = factories.campaign_row(stranger)
    (contact_id,) = due(stranger, campaign_id, 1)
    claim(stranger, campaign_id)
    with session():
        warnings = settle_campaign_contact(_report(owner, campaign_id, contact_id))
    assert warnings and "settled no campaign contact" in warnings[0]
    assert contact(contact_id).state == "in_progress"


def _report(owner, campaign_id, contact_id):
    return Report(call_id="0b7c5c7e-3a52-4a55-9f57-6f0f1d6c1a2b", workspace_id=owner.workspace_id, started_at=FRIDAY,
                  ended_at=FRIDAY, duration_ms=0.0, agent_id=None, call_type="outbound", status=None,
                  call_end_reason_category=None, ended_reason="customer-ended-call", customer=None,
                  recording_url=None, summary=None, transcript=None, sent_at=None, structured_data={}, tags=[],
                  raw={"campaignId": campaign_id, "contactId": contact_id})


def test_progress_counts_contacts_by_state_and_attempts_by_outcome(owner):
    campaign_id = factories.campaign_row(owner)
    ids = due(owner, campaign_id, 5)
    factories.suppressed(owner, factories.numbers(5)[4])
    claims = claim(owner, campaign_id, count=3).claims
    outcome(owner, campaign_id, claims[0].attempt_id, "answered")
    outcome(owner, campaign_id, claims[1].attempt_id, "no-answer")
    claim(owner, campaign_id, count=2, at=FRIDAY + timedelta(seconds=1))  # ids[3], and ids[4] suppressed
    with session():
        got = dialing.progress(workspace_id=owner.workspace_id, campaign_id=campaign_id)
    assert got.contacts == {"pending": 1, "in_progress": 2, "done": 1, "failed": 0, "suppressed": 1, "total": 5}
    assert got.attempts["answered"] == 1 and got.attempts["no-answer"] == 1 and got.attempts["open"] == 2
    assert got.attempts["total"] == 4 and got.answer_rate == 0.5 and got.status == "running"
    assert contact(ids[4]).state == "suppressed"
    with session():
        empty = dialing.progress(workspace_id=owner.workspace_id, campaign_id=factories.campaign_row(owner, name="empty"))
    assert empty.answer_rate is None and empty.contacts["total"] == 0


def test_concurrent_claimers_take_disjoint_contacts_within_the_concurrency(owner):
    campaign_id = factories.campaign_row(owner, max_concurrent_calls=40)
    due(owner, campaign_id, 400)

    def hold(_index: int) -> list[str]:  # nobody settles: at most 40 in all
        return [c.contact_id for _ in range(50) for c in claim(owner, campaign_id, count=3).claims]

    held = [contact_id for taken in run_threads(4, hold) for contact_id in taken]
    assert len(held) == 40 == len(set(held))
    with session():
        for contact_id in held:
            dialing.resolve(workspace_id=owner.workspace_id, campaign_id=campaign_id, contact_id=contact_id,
                            state="done", now=FRIDAY)

    def work(_index: int) -> list[str]:  # each settles what it took: everybody is reached once
        taken = []
        for _ in range(50):
            for c in claim(owner, campaign_id, count=5).claims:
                taken.append(c.contact_id)
                outcome(owner, campaign_id, c.attempt_id, "completed")
            with session():
                in_progress = CampaignContact.select().where(CampaignContact.campaign == campaign_id,
                                                             CampaignContact.state == "in_progress").count()
            assert in_progress <= 40
        return taken

    worked = [contact_id for taken in run_threads(4, work) for contact_id in taken]
    assert len(worked) == len(set(worked)) and not set(worked) & set(held)
    assert len(worked) == 360


def test_the_moves_execution_makes_by_itself_are_legal_moves():
    # A scheduled campaign starts when its startsAt comes; a running one completes when no contact
    # is left to try: both statements leave one status for another the table allows.
    for statement, (before, after) in ((dialing._START, (lifecycle.SCHEDULED, lifecycle.RUNNING)),
                                       (dialing._COMPLETE, (lifecycle.RUNNING, lifecycle.COMPLETED))):
        assert f"status = '{after}'" in statement.template and f"AND status = '{before}'" in statement.template
        assert after in lifecycle.MOVES[before]
