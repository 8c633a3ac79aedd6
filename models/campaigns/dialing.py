"""Campaign execution: the call runtime claims the contacts that are due, each claim an attempt with
a lease (models.kernel.leases); it reports each attempt's outcome, or the call's end-of-call-report
settles it (models.call_recorded); progress, and completion.

A claim runs in one transaction of a fixed number of statements, whatever the count: the campaign's
row locked first (FOR UPDATE on PostgreSQL; SQLite has one writer), so that concurrent claimers
neither exceed ``max_concurrent_calls`` nor count in-progress contacts another is about to add;
the attempts whose lease ran out settled ``lease_expired`` and their contacts put back; the
in-progress count; the time zones of the pending contacts, when the campaign calls in each
contact's local hours (one short walk of an index, a step per zone); the claim of up to N contacts
in one UPDATE (``LeasedWork.claim_many``, SKIP LOCKED on PostgreSQL), or, when only some zones are
open, one per open zone until N are taken (the zones whose hours end soonest first); the attempts
in one INSERT; the phone book's names in one SELECT. The count of statements depends on the open
zones, never on N.

A contact is due when its campaign is running (a scheduled one whose start has come is moved to
running by the claim), now is within the campaign's [startsAt, endsAt), its schedule is open (or,
with calling hours, it is within them in the contact's own zone: each zone's wall-clock time is
worked out from now, so a daylight-saving change moves the hours with the clock), it is pending,
its next attempt is due and it has attempts left. The do-not-call list is read by the claim
itself, as it takes each row: a number listed (and not expired) at that moment makes the contact
``suppressed`` instead of in progress, never handed out. Past endsAt the campaign completes; the
contacts not reached stay pending, to be seen in its progress.

Outcomes: answered and completed make the contact done; invalid-number fails it; do-not-call
(the callee asked not to be called) makes it done and lists the number (source opt-out);
voicemail makes it done unless ``retry``; no-answer, busy and failed retry (unless ``retry`` is
false) after ``retry_delay_s`` while attempts are left, else fail it. An attempt whose lease ran
out counts as failed (``lease_expired``) and its contact waits the retry delay too, since the
runtime may have dialled before it died. An outcome is stored only for the attempt the contact
still holds (the attempt count is its token); an attempt settled already answers as it was when
the same outcome is reported again, and a conflict for another one.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import NamedTuple

import orjson
from peewee import fn

from models.calls import end_reasons
from models.campaigns.contacts import STATES
from models.campaigns.lifecycle import COMPLETED, RUNNING, SCHEDULED
from models.campaigns.tables import Campaign, CampaignAttempt, CampaignContact
from models.kernel.db import database, is_postgres, new_id, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.leases import LeasedWork
from models.kernel.sql import Statement
from models.telephony import do_not_call, hours
from models.telephony.tables import PhoneAlias

MAX_CLAIM = 100
MIN_LEASE_S, MAX_LEASE_S, DEFAULT_LEASE_S = 30, 3600, 300
OUTCOMES = ("answered", "completed", "no-answer", "busy", "voicemail", "failed", "invalid-number", "do-not-call")
# Outcomes that are retried by default, and those a ``retry`` may be given for.
_RETRIED_BY_DEFAULT = frozenset({"no-answer", "busy", "failed"})
_RETRIABLE = _RETRIED_BY_DEFAULT | {"voicemail"}
# Outcomes in which someone picked up: the answer rate's numerator.
ANSWERED = frozenset({"answered", "completed", "do-not-call"})
LEASE_EXPIRED = "lease_expired"
RESOLVED_BY_HAND = "resolved-by-hand"
# An end-of-call-report's endedReason read as an outcome (models.calls.end_reasons, which call metrics
# read too); any other reason is a call that took place (completed).
ENDED_REASONS = end_reasons.UNREACHED


class RuntimeCampaign(NamedTuple):
    """What the runtime needs to dial for a campaign."""
    id: str
    status: str
    caller_number: str | None
    target_type: str
    target_id: str
    target_version_id: str | None  # the live published version


class Claim(NamedTuple):
    attempt_id: str
    contact_id: str
    number: str
    name: str | None
    alias: str | None
    time_zone: str
    variables: dict
    attempt: int
    lease_until: datetime


class Claimed(NamedTuple):
    campaign: RuntimeCampaign
    claims: list[Claim]


class ContactRecord(NamedTuple):
    id: str
    campaign_id: str
    number: str
    name: str | None
    time_zone: str
    state: str
    attempts: int
    next_attempt_at: datetime
    last_outcome: str | None
    last_call_id: str | None
    updated_at: datetime


class Renewed(NamedTuple):
    attempt_id: str
    contact_id: str
    attempt: int
    lease_until: datetime


class Progress(NamedTuple):
    campaign_id: str
    status: str
    contacts: dict  # state -> count, with total
    attempts: dict  # outcome -> count, with total and open (not yet settled)
    answer_rate: float | None


# --- statements --------------------------------------------------------------------------------

_CAMPAIGN = """SELECT c.id, c.status, c.target_type, c.target_id, p.number, c.calling_hours, c.starts_at,
    c.ends_at, c.max_concurrent_calls, c.max_attempts, c.retry_delay_s, s.time_zone, s.weekly_hours,
    s.exceptions, COALESCE(a.published_version_id, f.published_version_id)
    FROM campaign c
    LEFT JOIN phone_number p ON p.id = c.caller_number_id AND p.workspace_id = c.workspace_id
    LEFT JOIN schedule s ON s.id = c.schedule_id AND s.workspace_id = c.workspace_id
    LEFT JOIN agent a ON c.target_type = 'agent' AND a.id = c.target_id AND a.workspace_id = c.workspace_id
    LEFT JOIN workflow f ON c.target_type = 'workflow' AND f.id = c.target_id AND f.workspace_id = c.workspace_id
    WHERE c.id = {p} AND c.workspace_id = {p}"""
_CAMPAIGN_READ = Statement(_CAMPAIGN)
# The campaign's row locked for the claim itself: claimers of one campaign take turns from there to
# their commit, which is what keeps the in-progress count they read true until they commit. Taken
# as late as it can be (after the housekeeping and the zone walk, which need no turn), so that a
# turn lasts the count, the claim and the attempts' insert.
_LOCK = {True: Statement("SELECT status FROM campaign WHERE id = {p} FOR UPDATE"),
         False: Statement("SELECT status FROM campaign WHERE id = {p}")}

# The moves execution makes by itself (legal moves of lifecycle.MOVES), guarded by the status they leave.
_START = Statement(f"UPDATE campaign SET status = '{RUNNING}', updated_at = {{p}} WHERE id = {{p}} AND status = '{SCHEDULED}'")
_COMPLETE = Statement(f"UPDATE campaign SET status = '{COMPLETED}', completed_at = {{p}}, updated_at = {{p}} "
                      f"WHERE id = {{p}} AND status = '{RUNNING}'")
# Two probes of the (campaign, state, next_attempt_at) index (a MIN reads its first entry), where an
# EXISTS may be planned as a scan of the table that stops at the first row, which near the end of
# a campaign is the whole table.
_LEFT_TO_TRY = Statement(
    "SELECT 1 WHERE (SELECT MIN(next_attempt_at) FROM campaign_contact WHERE campaign_id = {p} "
    "AND state = 'pending') IS NOT NULL OR (SELECT MIN(next_attempt_at) FROM campaign_contact "
    "WHERE campaign_id = {p} AND state = 'in_progress') IS NOT NULL")

# Lapsed leases: a range of the (state, lease_until) index. A contact in progress also keeps its
# lease's end in next_attempt_at, which keeps it out of the due range of the claims' index.
_EXPIRE_ATTEMPTS = Statement(
    "UPDATE campaign_attempt SET outcome = 'lease_expired', reported_at = {p} WHERE outcome IS NULL "
    "AND contact_id IN (SELECT id FROM campaign_contact WHERE state = 'in_progress' AND lease_until < {p} "
    "AND campaign_id = {p})")
_EXPIRE_CONTACTS = Statement(
    "UPDATE campaign_contact SET state = CASE WHEN attempts >= {p} THEN 'failed' ELSE 'pending' END, "
    "next_attempt_at = {p}, lease_until = NULL, last_outcome = 'lease_expired', updated_at = {p} "
    "WHERE state = 'in_progress' AND lease_until < {p} AND campaign_id = {p}")
_IN_PROGRESS = Statement("SELECT count(*) FROM campaign_contact WHERE campaign_id = {p} AND state = 'in_progress'")
# The distinct zones of the pending contacts: a step down the (campaign, state, time_zone) index per
# zone, not a read of every contact.
_PENDING_ZONES = Statement(
    "WITH RECURSIVE z(tz) AS ("
    "SELECT MIN(time_zone) FROM campaign_contact WHERE campaign_id = {p} AND state = 'pending' "
    "UNION ALL SELECT (SELECT MIN(time_zone) FROM campaign_contact WHERE campaign_id = {p} "
    "AND state = 'pending' AND time_zone > z.tz) FROM z WHERE z.tz IS NOT NULL) "
    "SELECT tz FROM z WHERE tz IS NOT NULL")

_SUPPRESSED = do_not_call.listed_sql("campaign_contact.workspace_id", "campaign_contact.number")
# A contact found on the do-not-call list as it is taken becomes suppressed, and is not returned as
# a claim (its attempt count untouched: it was never dialled).
_CLAIM_SETS = (f"state = CASE WHEN {_SUPPRESSED} THEN 'suppressed' ELSE 'in_progress' END, "
               f"attempts = CASE WHEN {_SUPPRESSED} THEN attempts ELSE attempts + 1 END, "
               "lease_until = {p}, next_attempt_at = {p}, updated_at = {p}")
_CLAIM_RETURNING = "id, number, name, time_zone, variables, attempts, state"
_DUE = "w.campaign_id = {p} AND w.state = 'pending' AND w.next_attempt_at <= {p} AND w.attempts < {p}"

# Every zone open: the longest-waiting contacts first, off the (campaign, state, next_attempt_at) index.
_CONTACTS = LeasedWork(table="campaign_contact", key="id", due=_DUE, order="w.next_attempt_at",
                       claim_sets=_CLAIM_SETS, returning=_CLAIM_RETURNING, token="attempts")
# Some zones open: a claim per open zone until the count is reached (the zones whose hours end
# soonest first), each zone a range of the (campaign, state, time_zone, next_attempt_at) index in
# its order, the longest-waiting first. One statement for every open zone would have no index
# order to follow: a plan made for any zones may then scan the table.
_CONTACTS_IN_ZONE = LeasedWork(table="campaign_contact", key="id", due=_DUE + " AND w.time_zone = {p}",
                               order="w.next_attempt_at", claim_sets=_CLAIM_SETS, returning=_CLAIM_RETURNING,
                               token="attempts")


_CONTACT_COLUMNS = ("k.id, k.campaign_id, k.number, k.name, k.time_zone, k.state, k.attempts, k.next_attempt_at, "
                    "k.last_outcome, k.last_call_id, k.updated_at")
_CONTACT = (f"SELECT {_CONTACT_COLUMNS}, c.max_attempts, c.retry_delay_s FROM campaign_contact k "
            "JOIN campaign c ON c.id = k.campaign_id AND c.workspace_id = k.workspace_id "
            "WHERE k.id = {p} AND k.campaign_id = {p} AND k.workspace_id = {p}")
_CONTACT_LOCKED = {True: Statement(_CONTACT + " FOR UPDATE OF k"), False: Statement(_CONTACT)}
_ATTEMPT = Statement("SELECT id, contact_id, attempt, outcome, call_id, lease_until FROM campaign_attempt "
                     "WHERE id = {p} AND campaign_id = {p} AND workspace_id = {p}")
_OPEN_ATTEMPT = Statement("SELECT id FROM campaign_attempt WHERE contact_id = {p} AND attempt = {p} "
                          "AND outcome IS NULL")


def _time(value):
    return value if value is None or isinstance(value, datetime) else datetime.fromisoformat(value)


def _json(value):
    return orjson.loads(value) if isinstance(value, (str, bytes)) else value


# --- claims ------------------------------------------------------------------------------------

def check_claim(count: int, lease_s: int) -> None:
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_CLAIM:
        raise InvalidInput(f"count must be an integer from 1 to {MAX_CLAIM}.")
    check_lease(lease_s)


def check_lease(lease_s: int) -> None:
    if not isinstance(lease_s, int) or isinstance(lease_s, bool) or not MIN_LEASE_S <= lease_s <= MAX_LEASE_S:
        raise InvalidInput(f"leaseSeconds must be an integer from {MIN_LEASE_S} to {MAX_LEASE_S}.")


def _calling_hours_open(calling_hours: dict, zone_name: str, at: datetime) -> bool:
    """Whether ``at`` is within the campaign's days and hours on the wall clock of ``zone_name``."""
    window = [{"start": calling_hours["start"], "end": calling_hours["end"]}]
    weekly = {day: window for day in calling_hours.get("days", ())}
    try:
        return hours.is_open(time_zone=zone_name, weekly_hours=weekly, exceptions=[], at=at)
    except (KeyError, ValueError):  # a zone the system's database does not know: never open
        return False


def _minutes_left(calling_hours: dict, zone_name: str, at: datetime) -> int:
    """Minutes until the calling hours end today on the wall clock of ``zone_name``."""
    wall = hours.local(at, zone_name)
    end_h, end_m = (int(part) for part in calling_hours["end"].split(":"))
    return end_h * 60 + end_m - (wall.hour * 60 + wall.minute)


def open_zones(calling_hours: dict, zones: list[str], at: datetime) -> list[str]:
    """The zones among ``zones`` whose wall-clock time at ``at`` is within the calling hours."""
    return [zone for zone in zones if _calling_hours_open(calling_hours, zone, at)]


def claim(*, workspace_id: str, campaign_id: str, count: int = 1, lease_s: int = DEFAULT_LEASE_S,
          now: datetime | None = None) -> Claimed:
    """Up to ``count`` due contacts of the campaign, each leased for ``lease_s`` seconds as a new
    attempt (see the module's docstring); none when nothing is due. NotFound for a campaign of
    another workspace."""
    check_claim(count, lease_s)
    now = now or utcnow()
    until = now + timedelta(seconds=lease_s)
    postgres = is_postgres()
    with database.atomic():
        row = _CAMPAIGN_READ.one(campaign_id, workspace_id)
        if row is None:
            raise NotFound(f"No campaign {campaign_id} in this workspace.")
        (_, status, target_type, target_id, caller, calling_hours, starts_at, ends_at, max_concurrent,
         max_attempts, retry_delay_s, schedule_zone, weekly_hours, exceptions, version_id) = row
        starts_at, ends_at, calling_hours = _time(starts_at), _time(ends_at), _json(calling_hours)

        def answer(status: str, claims: list[Claim] = ()) -> Claimed:
            return Claimed(RuntimeCampaign(campaign_id, status, caller, target_type, target_id, version_id),
                           list(claims))

        if status == SCHEDULED and (starts_at is None or starts_at <= now):
            _START.execute(now, campaign_id)
            status = RUNNING
        # Lapsed leases first, whatever the status: their contacts are due again (or failed).
        _EXPIRE_ATTEMPTS.execute(now, now, campaign_id)
        _EXPIRE_CONTACTS.execute(max_attempts, now + timedelta(seconds=retry_delay_s), now, now, campaign_id)
        if status != RUNNING:
            return answer(status)
        if ends_at is not None and now >= ends_at:
            _COMPLETE.execute(now, now, campaign_id)
            return answer(COMPLETED)
        if starts_at is not None and now < starts_at:
            return answer(status)
        if schedule_zone is not None and not hours.is_open(
                time_zone=schedule_zone, weekly_hours=_json(weekly_hours), exceptions=_json(exceptions), at=now):
            return answer(status)
        zones = opened = None
        if calling_hours:
            zones = [r[0] for r in _PENDING_ZONES.all(campaign_id, campaign_id)]
            opened = open_zones(calling_hours, zones, now)
            if not opened and zones:
                return answer(status)
        # The turn: the status as it is now (a pause since the read above stops the claim).
        status = _LOCK[postgres].one(campaign_id)[0]
        if status != RUNNING:
            return answer(status)
        if calling_hours and not opened:
            return _completed_if_done(campaign_id, now, answer, status)
        limit = min(count, max_concurrent - _IN_PROGRESS.one(campaign_id)[0])
        if limit <= 0:
            return answer(status)
        if calling_hours:
            if len(opened) < len(zones):
                rows = []
                for zone in sorted(opened, key=lambda z: _minutes_left(calling_hours, z, now)):
                    left = limit - sum(1 for r in rows if r[6] == "in_progress")
                    if left <= 0:
                        break
                    rows += _CONTACTS_IN_ZONE.claim_many(left, now, now, until, until, now, campaign_id, now,
                                                         max_attempts, zone)
            else:
                rows = _CONTACTS.claim_many(limit, now, now, until, until, now, campaign_id, now, max_attempts)
        else:
            rows = _CONTACTS.claim_many(limit, now, now, until, until, now, campaign_id, now, max_attempts)
        taken = [r for r in rows if r[6] == "in_progress"]
        if not taken:
            return _completed_if_done(campaign_id, now, answer, status)
        claims = [Claim(attempt_id=new_id(), contact_id=r[0], number=r[1], name=r[2], alias=None,
                        time_zone=r[3], variables=_json(r[4]), attempt=r[5], lease_until=until) for r in taken]
        CampaignAttempt.insert_many([
            {"id": c.attempt_id, "workspace": workspace_id, "campaign": campaign_id, "contact": c.contact_id,
             "attempt": c.attempt, "claimed_at": now, "lease_until": until} for c in claims]).execute()
    # The phone book's names once the turn is over: shown to the runtime, not part of the claim.
    aliases = dict(PhoneAlias.in_workspace(workspace_id, PhoneAlias.number, PhoneAlias.name)
                   .where(PhoneAlias.number.in_(sorted({c.number for c in claims}))).tuples())
    return answer(status, [c._replace(alias=aliases.get(c.number)) for c in claims])


def _completed_if_done(campaign_id: str, now: datetime, answer, status: str) -> Claimed:
    return answer(COMPLETED if complete_if_done(campaign_id, now) else status)


def complete_if_done(campaign_id: str, now: datetime) -> bool:
    """The running campaign moved to completed when no contact is left to try (none pending, none in
    progress); whether it was."""
    if _LEFT_TO_TRY.one(campaign_id, campaign_id) is not None:
        return False
    return _COMPLETE.execute(now, now, campaign_id).rowcount == 1


# --- outcomes ----------------------------------------------------------------------------------

def _locked_contact(workspace_id: str, campaign_id: str, contact_id: str):
    row = _CONTACT_LOCKED[is_postgres()].one(contact_id, campaign_id, workspace_id)
    if row is None:
        return None, None
    record = ContactRecord(*row[:11])
    return record._replace(next_attempt_at=_time(record.next_attempt_at), updated_at=_time(record.updated_at)), row[11:]


def _attempt(workspace_id: str, campaign_id: str, attempt_id: str):
    row = _ATTEMPT.one(attempt_id, campaign_id, workspace_id)
    if row is None:
        raise NotFound(f"No attempt {attempt_id} in campaign {campaign_id} of this workspace.")
    return row


def _next_state(outcome: str, retry: bool, attempts: int, max_attempts: int) -> str:
    if outcome in ("answered", "completed", "do-not-call"):
        return "done"
    if outcome == "invalid-number":
        return "failed"
    if not retry:
        return "done" if outcome == "voicemail" else "failed"
    return "pending" if attempts < max_attempts else "failed"


def _settle(workspace_id: str, contact: ContactRecord, limits, attempt_id: str, outcome: str,
            call_id: str | None, retry: bool, added_by: str, now: datetime) -> None:
    max_attempts, retry_delay_s = limits
    state = _next_state(outcome, retry, contact.attempts, max_attempts)
    CampaignAttempt.update(outcome=outcome, call_id=call_id, reported_at=now).where(
        (CampaignAttempt.id == attempt_id) & CampaignAttempt.outcome.is_null()).execute()
    changes = {"state": state, "lease_until": None, "last_outcome": outcome, "updated_at": now}
    if call_id is not None:
        changes["last_call_id"] = call_id
    if state == "pending":
        changes["next_attempt_at"] = now + timedelta(seconds=retry_delay_s)
    CampaignContact.update(**changes).where(CampaignContact.id == contact.id).execute()
    if outcome == "do-not-call":
        # Listed for good, an entry that was to expire included: the callee asked.
        do_not_call.opt_out(workspace_id=workspace_id, number=contact.number, added_by=added_by, now=now,
                            reason="The callee asked not to be called again (campaign call).")
    if state != "pending":
        complete_if_done(contact.campaign_id, now)


def _read_contact(contact_id: str) -> ContactRecord:
    C = CampaignContact
    row = C.select(C.id, C.campaign, C.number, C.name, C.time_zone, C.state, C.attempts, C.next_attempt_at,
                   C.last_outcome, C.last_call_id, C.updated_at).where(C.id == contact_id).tuples().get()
    return ContactRecord(*row)


def report_outcome(*, workspace_id: str, campaign_id: str, attempt_id: str, outcome: str,
                   call_id: str | None = None, retry: bool | None = None, added_by: str,
                   now: datetime | None = None) -> ContactRecord:
    """The attempt settled with ``outcome``, and its contact moved on (see the module's docstring);
    the contact. Conflict when the attempt is no longer the contact's (its lease ran out) or was
    settled with another outcome."""
    if outcome not in OUTCOMES:
        raise InvalidInput(f"outcome must be one of {', '.join(OUTCOMES)}.")
    if retry is not None and outcome not in _RETRIABLE:
        raise InvalidInput(f"retry applies to the outcomes {', '.join(sorted(_RETRIABLE))}, not {outcome}.")
    now = now or utcnow()
    with database.atomic():
        attempt = _attempt(workspace_id, campaign_id, attempt_id)
        contact, limits = _locked_contact(workspace_id, campaign_id, attempt[1])
        attempt = _ATTEMPT.one(attempt_id, campaign_id, workspace_id)  # as it is under the lock
        if attempt[3] is not None:
            if attempt[3] == outcome and (call_id is None or call_id == attempt[4]):
                return contact  # the same report again: answered as it was
            raise Conflict(_settled_already(attempt_id, attempt[3]))
        if contact.state != "in_progress" or contact.attempts != attempt[2]:
            raise Conflict(f"Attempt {attempt_id} is no longer the contact's: its lease ran out and the "
                           "contact was put back or claimed again.")
        _settle(workspace_id, contact, limits, attempt_id, outcome, call_id,
                outcome in _RETRIED_BY_DEFAULT if retry is None else retry, added_by, now)
        return _read_contact(contact.id)


def _settled_already(attempt_id: str, outcome: str) -> str:
    if outcome == LEASE_EXPIRED:
        return (f"Attempt {attempt_id} is no longer the contact's: its lease ran out (outcome "
                f"{LEASE_EXPIRED}); renew a lease before it ends.")
    return f"Attempt {attempt_id} was settled already with the outcome {outcome}."


def renew(*, workspace_id: str, campaign_id: str, attempt_id: str, lease_s: int,
          now: datetime | None = None) -> Renewed:
    """The attempt's lease extended to now + ``lease_s``, while the contact still holds it."""
    check_lease(lease_s)
    now = now or utcnow()
    until = now + timedelta(seconds=lease_s)
    with database.atomic():
        attempt = _attempt(workspace_id, campaign_id, attempt_id)
        contact, _ = _locked_contact(workspace_id, campaign_id, attempt[1])
        attempt = _ATTEMPT.one(attempt_id, campaign_id, workspace_id)
        if attempt[3] is not None:
            raise Conflict(_settled_already(attempt_id, attempt[3]))
        if contact.state != "in_progress" or contact.attempts != attempt[2]:
            raise Conflict(f"Attempt {attempt_id} is no longer the contact's: its lease ran out.")
        CampaignAttempt.update(lease_until=until).where(CampaignAttempt.id == attempt_id).execute()
        CampaignContact.update(lease_until=until, next_attempt_at=until, updated_at=now).where(
            CampaignContact.id == contact.id).execute()
    return Renewed(attempt_id, contact.id, attempt[2], until)


def resolve(*, workspace_id: str, campaign_id: str, contact_id: str, state: str,
            now: datetime | None = None) -> ContactRecord:
    """The contact marked done or failed by hand, whatever its state; a contact in progress has its
    open attempt closed with the outcome ``resolved-by-hand`` (a late outcome of it is then a
    conflict)."""
    if state not in ("done", "failed"):
        raise InvalidInput("state must be done or failed.")
    now = now or utcnow()
    with database.atomic():
        contact, _ = _locked_contact(workspace_id, campaign_id, contact_id)
        if contact is None:
            raise NotFound(f"No contact {contact_id} in campaign {campaign_id} of this workspace.")
        if contact.state == "in_progress":
            CampaignAttempt.update(outcome=RESOLVED_BY_HAND, reported_at=now).where(
                (CampaignAttempt.contact == contact_id) & (CampaignAttempt.attempt == contact.attempts)
                & CampaignAttempt.outcome.is_null()).execute()
        CampaignContact.update(state=state, lease_until=None, last_outcome=RESOLVED_BY_HAND, updated_at=now).where(
            CampaignContact.id == contact_id).execute()
        complete_if_done(campaign_id, now)
        return _read_contact(contact_id)


# --- the end-of-call-report --------------------------------------------------------------------

def outcome_of_report(ended_reason: str | None) -> str:
    return end_reasons.outcome_of_report(ended_reason)


def settle_from_report(*, workspace_id: str, campaign_id, contact_id, attempt_id, call_id: str,
                       ended_reason: str | None, now: datetime | None = None) -> list[str]:
    """The contact's open attempt settled by its call's end-of-call-report (its endedReason read
    as an outcome, ``ENDED_REASONS``); warnings for a report naming no contact of this workspace.
    A contact whose attempt was settled already (the runtime reported first) is left as it is."""
    ids = {"campaignId": campaign_id, "contactId": contact_id}
    if attempt_id is not None:
        ids["attemptId"] = attempt_id
    if not all(isinstance(v, str) and 0 < len(v) <= 64 for v in ids.values()):
        return ["campaignId and contactId (and attemptId) must be ids of this workspace: the report settled "
                "no campaign contact."]
    now = now or utcnow()
    with database.atomic():
        contact, limits = _locked_contact(workspace_id, campaign_id, contact_id)
        if contact is None:
            return [f"No contact {contact_id} in campaign {campaign_id} of this workspace: the report settled "
                    "no campaign contact."]
        if contact.state != "in_progress":
            return []
        open_attempt = _OPEN_ATTEMPT.one(contact_id, contact.attempts)
        if open_attempt is None or (attempt_id is not None and open_attempt[0] != attempt_id):
            return [f"Attempt {attempt_id} is not the open attempt of contact {contact_id}: the report settled "
                    "no campaign contact."] if attempt_id is not None else []
        outcome = outcome_of_report(ended_reason)
        _settle(workspace_id, contact, limits, open_attempt[0], outcome, call_id, outcome in _RETRIED_BY_DEFAULT,
                "end-of-call-report", now)
    return []


# --- progress ----------------------------------------------------------------------------------

def progress(*, workspace_id: str, campaign_id: str) -> Progress:
    """Contacts by state, attempts by outcome, the answer rate (answered over attempts settled by a
    call's outcome: neither open nor resolved by hand), the status."""
    status = Campaign.in_workspace(workspace_id, Campaign.status).where(Campaign.id == campaign_id).scalar()
    if status is None:
        raise NotFound(f"No campaign {campaign_id} in this workspace.")
    C, A = CampaignContact, CampaignAttempt
    contacts = {state: 0 for state in STATES}
    contacts.update(dict(C.select(C.state, fn.COUNT(C.id)).where(C.campaign == campaign_id)
                         .group_by(C.state).tuples()))
    contacts["total"] = sum(contacts.values())
    by_outcome = dict(A.select(A.outcome, fn.COUNT(A.id)).where(A.campaign == campaign_id)
                      .group_by(A.outcome).tuples())
    attempts = {outcome: by_outcome.get(outcome, 0) for outcome in (*OUTCOMES, LEASE_EXPIRED, RESOLVED_BY_HAND)}
    attempts["open"] = by_outcome.get(None, 0)
    attempts["total"] = sum(by_outcome.values())
    settled = sum(n for outcome, n in by_outcome.items() if outcome not in (None, RESOLVED_BY_HAND))
    answered = sum(attempts[o] for o in ANSWERED)
    return Progress(campaign_id, status, contacts, attempts, round(answered / settled, 4) if settled else None)
