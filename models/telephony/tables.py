"""The tables of telephony: phone numbers, the phone book, the do-not-call list and business-hours
schedules (models.telephony)."""
from __future__ import annotations

from peewee import BooleanField, CharField, DateTimeField, ForeignKeyField, TextField

from models.kernel.db import JSONField, new_id, utcnow
from models.kernel.scoping import WorkspaceScoped


class Schedule(WorkspaceScoped):
    """Named weekly business hours in an IANA time zone, with dated exceptions (models.telephony.hours
    reads them)."""
    id = CharField(primary_key=True, default=new_id)
    name = TextField()
    name_key = TextField()  # the name folded to lower case: unique per workspace without case
    time_zone = CharField(max_length=64)
    # {"monday": [{"start": "09:00", "end": "17:00"}], ...}: days absent or empty are closed.
    weekly_hours = JSONField()
    # [{"date": "2026-12-25", "name": "Christmas", "hours": []}, ...]: hours [] is closed all day.
    exceptions = JSONField()
    created_by = CharField()
    created_at = DateTimeField(default=utcnow)
    updated_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = (
            (("workspace", "name_key"), True),
            (("workspace", "created_at", "id"), False),
        )


class PhoneNumber(WorkspaceScoped):
    id = CharField(primary_key=True, default=new_id)
    number = CharField(max_length=32)  # E.164, unique across the service
    label = TextField(null=True)
    provider = TextField(null=True)
    inbound = BooleanField()
    outbound = BooleanField()
    # What answers a call to the number (agent or workflow; None: nobody, 409 on resolve), and
    # outside its schedule's hours, when it has one.
    inbound_target_type = CharField(max_length=16, null=True)
    inbound_target_id = CharField(null=True)
    schedule = ForeignKeyField(Schedule, null=True, on_delete="SET NULL", backref="+", index=False)
    after_hours_target_type = CharField(max_length=16, null=True)
    after_hours_target_id = CharField(null=True)
    created_by = CharField()
    created_at = DateTimeField(default=utcnow)
    updated_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = (
            (("number",), True),
            (("workspace", "created_at", "id"), False),
            (("workspace", "inbound_target_id"), False),
            (("workspace", "after_hours_target_id"), False),
            (("schedule",), False),
        )


class PhoneAlias(WorkspaceScoped):
    """A name for a number in the workspace's phone book: one name per number, one number per name."""
    id = CharField(primary_key=True, default=new_id)
    name = TextField()
    name_key = TextField()  # the name folded to lower case: unique per workspace without case
    number = CharField(max_length=32)  # E.164
    created_by = CharField()
    created_at = DateTimeField(default=utcnow)
    updated_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = (
            (("workspace", "name_key"), True),
            (("workspace", "number"), True),
            (("workspace", "created_at", "id"), False),
        )


class SuppressedNumber(WorkspaceScoped):
    """A number of the do-not-call list: never dialled while it is listed and not expired."""
    id = CharField(primary_key=True, default=new_id)
    number = CharField(max_length=32)  # E.164
    reason = TextField(null=True)
    source = CharField(max_length=32)
    added_by = CharField()
    added_at = DateTimeField(default=utcnow)
    expires_at = DateTimeField(null=True)

    class Meta:
        indexes = (
            (("workspace", "number"), True),
            (("workspace", "added_at", "id"), False),
        )
