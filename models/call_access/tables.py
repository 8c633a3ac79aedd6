"""The tables of call access: web-call tokens and share links (models.call_access)."""
from __future__ import annotations

from peewee import BooleanField, CharField, DateTimeField, ForeignKeyField, IntegerField

from models.calls.tables import Call
from models.configs.tables import Agent, Version
from models.kernel.db import new_id, utcnow
from models.kernel.scoping import WorkspaceScoped


class WebCallToken(WorkspaceScoped):
    """A single-use token that starts a call with one version of an agent; only its SHA-256 is kept."""
    id = CharField(primary_key=True, default=new_id)
    token_hash = CharField(unique=True)
    agent = ForeignKeyField(Agent, on_delete="CASCADE", backref="+")
    version = ForeignKeyField(Version, on_delete="CASCADE", backref="+")
    version_number = IntegerField()
    created_by = CharField()
    created_at = DateTimeField(default=utcnow)
    expires_at = DateTimeField()
    redeemed_at = DateTimeField(null=True)  # set once, by the redemption that wins

    class Meta:
        table_name = "web_call_token"
        indexes = ((("workspace", "created_at", "id"), False),)


class CallShareLink(WorkspaceScoped):
    """A link that shows one call without a credential until it expires or is revoked; only its
    token's SHA-256 is kept. Deleted with its call."""
    id = CharField(primary_key=True, default=new_id)
    call = ForeignKeyField(Call, on_delete="CASCADE", backref="+", index=False)
    token_hash = CharField(unique=True)
    include_recording = BooleanField()
    created_by = CharField()
    created_at = DateTimeField(default=utcnow)
    expires_at = DateTimeField()
    revoked_at = DateTimeField(null=True)

    class Meta:
        table_name = "call_share_link"
        # A call's links, newest first; the call's deletion finds its links by it too.
        indexes = ((("call", "created_at", "id"), False),)
