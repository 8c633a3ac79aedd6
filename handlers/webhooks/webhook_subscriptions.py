"""Outbound webhook subscriptions: createWebhookSubscription, listWebhookSubscriptions,
getWebhookSubscription, updateWebhookSubscription, deleteWebhookSubscription,
rotateWebhookSubscriptionSecret, testWebhookSubscription, listWebhookSubscriptionDeliveries."""
from __future__ import annotations

from api import webhook_worker
from api.envelope import ok
from handlers.wire import deleted, iso
from models.webhooks import outbox, subscriptions
from models.webhooks.subscriptions import SubscriptionRecord

from .webhook_events import attempt_shape, event_shape


def subscription_shape(record: SubscriptionRecord) -> dict:
    return {"id": record.id, "workspaceId": record.workspace_id, "url": record.url, "events": record.events,
            "description": record.description, "enabled": record.enabled, "disabledReason": record.disabled_reason,
            "failingSince": iso(record.failing_since), "previousSecretExpiresAt": iso(record.previous_secret_expires_at),
            "createdBy": record.created_by, "createdAt": iso(record.created_at), "updatedAt": iso(record.updated_at)}


def create_webhook_subscription(workspaceId: str, body: dict, principal):
    record, secret = subscriptions.create(
        principal, workspace_id=workspaceId, url=body["url"], events=body["events"],
        description=body.get("description"), enabled=body.get("enabled", True))
    return ok({"subscription": subscription_shape(record), "signingSecret": secret},
              "Webhook subscription created; its signing secret is shown this once")


def list_webhook_subscriptions(workspaceId: str, limit: int = 20, offset: int = 0):
    page = subscriptions.list_subscriptions(workspace_id=workspaceId, limit=limit, offset=offset)
    return ok({"subscriptions": [subscription_shape(s) for s in page.items], "pagination": page.pagination()})


def get_webhook_subscription(workspaceId: str, subscriptionId: str):
    record = subscriptions.get(workspace_id=workspaceId, subscription_id=subscriptionId)
    return ok({"subscription": subscription_shape(record)})


def update_webhook_subscription(workspaceId: str, subscriptionId: str, body: dict):
    changes = {"description": body["description"]} if "description" in body else {}
    record = subscriptions.update(workspace_id=workspaceId, subscription_id=subscriptionId,
                                          url=body.get("url"), events=body.get("events"),
                                          enabled=body.get("enabled"), **changes)
    return ok({"subscription": subscription_shape(record)}, "Webhook subscription updated")


def delete_webhook_subscription(workspaceId: str, subscriptionId: str):
    subscriptions.delete(workspace_id=workspaceId, subscription_id=subscriptionId)
    return deleted(subscriptionId, "Webhook subscription deleted, with its events and their delivery log")


def rotate_webhook_subscription_secret(workspaceId: str, subscriptionId: str, body: dict | None = None):
    grace_s = (body or {}).get("graceSeconds", subscriptions.DEFAULT_GRACE_S)
    record, secret = subscriptions.rotate_secret(workspace_id=workspaceId, subscription_id=subscriptionId,
                                                         grace_s=grace_s)
    return ok({"subscription": subscription_shape(record), "signingSecret": secret},
              "Signing secret rotated; the new one is shown this once")


async def test_webhook_subscription(workspaceId: str, subscriptionId: str):
    outcome, event = await webhook_worker.test_fire(workspace_id=workspaceId, subscription_id=subscriptionId)
    result = {"delivered": outcome.succeeded, "statusCode": outcome.status_code,
              "latencyMs": round(outcome.latency_ms, 3), "error": outcome.error, "event": event_shape(event)}
    return ok(result, "The receiver accepted the ping" if outcome.succeeded else "The ping was not accepted")


def list_webhook_subscription_deliveries(workspaceId: str, subscriptionId: str, limit: int = 20, offset: int = 0):
    page = outbox.subscription_attempts(workspace_id=workspaceId, subscription_id=subscriptionId,
                                                limit=limit, offset=offset)
    return ok({"deliveries": [attempt_shape(a) for a in page.items], "pagination": page.pagination()})
