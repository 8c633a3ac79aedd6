"""The credits ledger's table: every grant and debit of a workspace (models.billing.credits)."""
from __future__ import annotations

from peewee import AutoField, BigIntegerField, CharField, DateTimeField, DoubleField, TextField

from models.kernel.db import utcnow
from models.kernel.scoping import WorkspaceScoped


class CreditEntry(WorkspaceScoped):
    id = AutoField()
    kind = CharField()
    # Credits: positive for a grant, negative for a debit.
    amount = BigIntegerField()
    # What was used or granted, in ``unit``: minutes of a call, seconds of audio, credits.
    quantity = DoubleField()
    unit = CharField()
    # What the entry is for (call:<id>); unique in the workspace, so nothing is debited twice.
    reference = CharField(null=True)
    description = TextField(null=True)
    created_by = CharField(null=True)
    created_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = ((("workspace", "created_at", "id"), False), (("workspace", "reference"), True))
