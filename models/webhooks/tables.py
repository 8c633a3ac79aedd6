"""The tables of webhooks: the signing secrets of inbound reports and the webhook-ids of those
taken in, the outbound subscriptions, their events (the outbox) and the log of delivery attempts
(models.webhooks)."""
from __future__ import annotations

from peewee import (
    AutoField,
    BooleanField,
    CharField,
    CompositeKey,
    DateTimeField,
    DoubleField,
    ForeignKeyField,
    IntegerField,
    TextField,
)

from models.calls.tables import Call
from models.kernel.db import JSONField, new_id, utcnow
from models.kernel.scoping import WorkspaceScoped


class SigningSecret(WorkspaceScoped):
    id = CharField(primary_key=True, default=new_id)
    secret_encrypted = TextField()
    description = TextField(null=True)
    created_at = DateTimeField(default=utcnow)
    created_by = CharField()
    # None: the current secret; a rotated-out secret verifies until then.
    expires_at = DateTimeField(null=True)

    class Meta:
        indexes = ((("workspace", "created_at"), False),)


class ReceivedWebhook(WorkspaceScoped):
    """The webhook-id of a signed report taken in, kept while a replay of it could still verify
    (models.webhooks.replays)."""
    webhook_id = CharField(max_length=256)
    received_at = DateTimeField()

    class Meta:
        primary_key = CompositeKey("workspace", "webhook_id")
        indexes = ((("received_at",), False),)


class WebhookSubscription(WorkspaceScoped):
    id = CharField(primary_key=True, default=new_id)
    url = TextField()
    events = JSONField()
    description = TextField(null=True)
    enabled = BooleanField()
    disabled_reason = TextField(null=True)
    secret_encrypted = TextField()
    previous_secret_encrypted = TextField(null=True)
    previous_secret_expires_at = DateTimeField(null=True)
    # The first failed attempt since the last success: None while deliveries succeed.
    failing_since = DateTimeField(null=True)
    created_by = CharField()
    created_at = DateTimeField(default=utcnow)
    updated_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = ((("workspace", "created_at", "id"), False),)


class WebhookEvent(WorkspaceScoped):
    id = CharField(primary_key=True, default=new_id)  # the webhook-id: the same in every attempt
    subscription = ForeignKeyField(WebhookSubscription, on_delete="CASCADE", backref="+", index=False)
    event_type = CharField(max_length=64)
    call = ForeignKeyField(Call, on_delete="CASCADE", backref="+", null=True, index=False)
    payload = JSONField()
    status = CharField(max_length=32)
    attempts = IntegerField(default=0)
    next_attempt_at = DateTimeField()
    # While an attempt is under way: until when it is the claiming worker's.
    lease_until = DateTimeField(null=True)
    give_up_at = DateTimeField()
    last_error = TextField(null=True)
    created_at = DateTimeField(default=utcnow)
    delivered_at = DateTimeField(null=True)

    class Meta:
        indexes = (
            (("status", "next_attempt_at"), False),
            (("workspace", "created_at", "id"), False),
            (("subscription", "created_at", "id"), False),
            (("call",), False),
        )


class WebhookAttempt(WorkspaceScoped):
    id = AutoField()
    event = ForeignKeyField(WebhookEvent, on_delete="CASCADE", backref="+", index=False)
    subscription = ForeignKeyField(WebhookSubscription, on_delete="CASCADE", backref="+", index=False)
    attempt = IntegerField()
    started_at = DateTimeField()
    succeeded = BooleanField()
    status_code = IntegerField(null=True)
    latency_ms = DoubleField()
    error = TextField(null=True)
    response_body = TextField(null=True)

    class Meta:
        indexes = (
            (("subscription", "id"), False),
            (("event", "id"), False),
        )
