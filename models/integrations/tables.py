"""The table of integrations: a workspace's third-party credentials (models.integrations)."""
from __future__ import annotations

from peewee import CharField, DateTimeField, TextField

from models.kernel.db import new_id, utcnow
from models.kernel.scoping import WorkspaceScoped


class Integration(WorkspaceScoped):
    """A third party's address and credential; the secret is kept encrypted (models.kernel.encryption)
    and only its last characters are ever shown."""
    id = CharField(primary_key=True, default=new_id)
    kind = CharField(max_length=16)  # telephony, llm, crm or runtime
    name = TextField()
    base_url = TextField(null=True)
    model = TextField(null=True)  # llm: the model asked
    provider = TextField(null=True)  # telephony: the provider's name
    account_id = TextField(null=True)  # telephony: the account at the provider
    secret = TextField()  # encrypted
    secret_hint = CharField(max_length=8)
    created_by = CharField()
    created_at = DateTimeField(default=utcnow)
    updated_at = DateTimeField(default=utcnow)
    rotated_at = DateTimeField(null=True)

    class Meta:
        indexes = ((("workspace", "created_at", "id"), False),)
