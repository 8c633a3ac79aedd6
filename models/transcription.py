"""Background transcription of uploaded call recordings: a durable job per call."""
from __future__ import annotations

from peewee import CharField, DateTimeField, ForeignKeyField, IntegerField, TextField

from .calls import Call
from .db import utcnow
from .scoping import WorkspaceScoped

JOB_STATUSES = ("pending", "running", "done", "failed")


class TranscriptionJob(WorkspaceScoped):
    call = ForeignKeyField(Call, primary_key=True, on_delete="CASCADE", backref="+")
    status = CharField(max_length=32)
    attempts = IntegerField(default=0)
    # A running job whose lease ran out (its process died) is taken again by another.
    lease_until = DateTimeField(null=True)
    error = TextField(null=True)
    created_at = DateTimeField(default=utcnow)
    updated_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = ((("status", "lease_until"), False),)
