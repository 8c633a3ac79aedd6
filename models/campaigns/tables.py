"""The tables of campaigns: the campaign, its contacts and each attempt to call one
(models.campaigns)."""
from __future__ import annotations

from peewee import CharField, DateTimeField, ForeignKeyField, IntegerField, TextField

from models.kernel.db import JSONField, new_id, utcnow
from models.kernel.scoping import WorkspaceScoped
from models.telephony.tables import PhoneNumber, Schedule


class Campaign(WorkspaceScoped):
    id = CharField(primary_key=True, default=new_id)
    name = TextField()
    status = CharField(max_length=16)
    target_type = CharField(max_length=16)  # agent or workflow
    target_id = CharField()
    caller_number = ForeignKeyField(PhoneNumber, backref="+", index=False)
    # When it may call: a schedule (in its own time zone), or hours and days in each contact's zone.
    schedule = ForeignKeyField(Schedule, null=True, backref="+", index=False)
    calling_hours = JSONField(null=True)  # {"days": ["monday", ...], "start": "09:00", "end": "17:00"}
    starts_at = DateTimeField(null=True)
    ends_at = DateTimeField(null=True)
    max_concurrent_calls = IntegerField()
    max_attempts = IntegerField()
    retry_delay_s = IntegerField()
    created_by = CharField()
    created_at = DateTimeField(default=utcnow)
    updated_at = DateTimeField(default=utcnow)
    completed_at = DateTimeField(null=True)

    class Meta:
        indexes = (
            (("workspace", "created_at", "id"), False),
            (("workspace", "status", "created_at"), False),
            (("workspace", "target_id"), False),
            (("caller_number",), False),
            (("schedule",), False),
        )


class CampaignContact(WorkspaceScoped):
    id = CharField(primary_key=True, default=new_id)
    campaign = ForeignKeyField(Campaign, on_delete="CASCADE", backref="+", index=False)
    number = CharField(max_length=32)  # E.164
    name = TextField(null=True)
    time_zone = CharField(max_length=64)
    variables = JSONField()
    # pending, in_progress, done, failed, suppressed
    state = CharField(max_length=16)
    attempts = IntegerField(default=0)
    next_attempt_at = DateTimeField()
    # While a claim is under way: until when it is the claiming runtime's (models.kernel.leases).
    lease_until = DateTimeField(null=True)
    last_outcome = CharField(max_length=32, null=True)
    last_call_id = CharField(null=True)
    created_at = DateTimeField(default=utcnow)
    updated_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = (
            (("campaign", "number"), True),
            (("campaign", "state", "next_attempt_at"), False),
            # The claim in some zones only, and the walk over the pending contacts' zones.
            (("campaign", "state", "time_zone", "next_attempt_at"), False),
            (("campaign", "created_at", "id"), False),
            (("state", "lease_until"), False),
        )


class CampaignAttempt(WorkspaceScoped):
    """One claim of a contact: the runtime's call and its outcome, once reported."""
    id = CharField(primary_key=True, default=new_id)
    campaign = ForeignKeyField(Campaign, on_delete="CASCADE", backref="+", index=False)
    contact = ForeignKeyField(CampaignContact, on_delete="CASCADE", backref="+", index=False)
    attempt = IntegerField()
    claimed_at = DateTimeField()
    lease_until = DateTimeField()
    outcome = CharField(max_length=32, null=True)  # None until reported (or the lease ran out)
    call_id = CharField(null=True)
    reported_at = DateTimeField(null=True)

    class Meta:
        indexes = (
            (("contact", "attempt"), True),
            (("campaign", "claimed_at"), False),
        )
