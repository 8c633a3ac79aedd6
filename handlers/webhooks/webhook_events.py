"""Outbound webhook events and their delivery log: listWebhookEvents, getWebhookEvent,
listWebhookEventDeliveries, redeliverWebhookEvent."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import iso
from models.webhooks import outbox
from models.webhooks.outbox import AttemptRecord, EventRecord


def event_shape(event: EventRecord) -> dict:
    return {"id": event.id, "workspaceId": event.workspace_id, "subscriptionId": event.subscription_id,
            "type": event.event_type, "callId": event.call_id, "status": event.status, "attempts": event.attempts,
            "nextAttemptAt": iso(event.next_attempt_at) if event.status == "pending" else None,
            "giveUpAt": iso(event.give_up_at), "lastError": event.last_error, "createdAt": iso(event.created_at),
            "deliveredAt": iso(event.delivered_at)}


def attempt_shape(attempt: AttemptRecord) -> dict:
    return {"id": attempt.id, "eventId": attempt.event_id, "subscriptionId": attempt.subscription_id,
            "attempt": attempt.attempt, "startedAt": iso(attempt.started_at), "succeeded": attempt.succeeded,
            "statusCode": attempt.status_code, "latencyMs": attempt.latency_ms, "error": attempt.error,
            "responseBody": attempt.response_body}


def list_webhook_events(workspaceId: str, limit: int = 20, offset: int = 0, subscriptionId: str | None = None,
                        status: str | None = None, callId: str | None = None):
    page = outbox.list_events(workspace_id=workspaceId, limit=limit, offset=offset,
                                      subscription_id=subscriptionId, status=status, call_id=callId)
    return ok({"events": [event_shape(e) for e in page.items], "pagination": page.pagination()})


def get_webhook_event(workspaceId: str, eventId: str):
    detail = outbox.get_event(workspace_id=workspaceId, event_id=eventId)
    return ok({"event": {**event_shape(detail.event), "payload": detail.payload}})


def list_webhook_event_deliveries(workspaceId: str, eventId: str, limit: int = 20, offset: int = 0):
    page = outbox.event_attempts(workspace_id=workspaceId, event_id=eventId, limit=limit, offset=offset)
    return ok({"deliveries": [attempt_shape(a) for a in page.items], "pagination": page.pagination()})


def redeliver_webhook_event(workspaceId: str, eventId: str):
    event = outbox.redeliver(workspace_id=workspaceId, event_id=eventId)
    return ok({"event": event_shape(event)}, "The event is due for delivery now")
