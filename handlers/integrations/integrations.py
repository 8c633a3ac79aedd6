"""Integrations: createIntegration, listIntegrations, getIntegration, updateIntegration,
deleteIntegration, rotateIntegrationSecret, testIntegration. No answer carries a secret: only its hint."""
from __future__ import annotations

from api import webhook_delivery
from api.envelope import ok
from handlers.wire import deleted, iso
from models.integrations import integrations
from models.integrations.integrations import IntegrationRecord

TEST_TIMEOUT_S = 5.0  # a connection test's whole time: resolution, connection, request, answer
# The fields a body may carry, by their names on the wire and in the domain (the secret apart).
_FIELDS = {"name": "name", "baseUrl": "base_url", "model": "model", "provider": "provider", "account": "account_id"}


def integration_shape(record: IntegrationRecord) -> dict:
    return {"id": record.id, "workspaceId": record.workspace_id, "kind": record.kind, "name": record.name,
            "baseUrl": record.base_url, "model": record.model, "provider": record.provider,
            "account": record.account_id, "secretHint": record.secret_hint, "createdBy": record.created_by,
            "createdAt": iso(record.created_at), "updatedAt": iso(record.updated_at),
            "rotatedAt": iso(record.rotated_at) if record.rotated_at else None}


def _given(body: dict) -> dict:
    return {name: body[key] for key, name in _FIELDS.items() if key in body}


def create_integration(workspaceId: str, body: dict, principal):
    record = integrations.create(principal, workspace_id=workspaceId, kind=body["kind"], secret=body["secret"],
                                 **_given(body))
    return ok({"integration": integration_shape(record), "secretStored": True},
              "Integration created; its secret is stored encrypted and never shown again")


def list_integrations(workspaceId: str, limit: int = 20, offset: int = 0, kind: str | None = None):
    page = integrations.list_integrations(workspace_id=workspaceId, limit=limit, offset=offset, kind=kind)
    return ok({"integrations": [integration_shape(r) for r in page.items], "pagination": page.pagination()})


def get_integration(workspaceId: str, integrationId: str):
    return ok({"integration": integration_shape(integrations.get(workspace_id=workspaceId,
                                                                 integration_id=integrationId))})


def update_integration(workspaceId: str, integrationId: str, body: dict):
    record = integrations.update(workspace_id=workspaceId, integration_id=integrationId, **_given(body))
    return ok({"integration": integration_shape(record)}, "Integration updated")


def rotate_integration_secret(workspaceId: str, integrationId: str, body: dict):
    record = integrations.rotate(workspace_id=workspaceId, integration_id=integrationId, secret=body["secret"])
    return ok({"integration": integration_shape(record)}, "Secret rotated")


def test_integration(workspaceId: str, integrationId: str):
    """One request to the integration's endpoint, as a webhook's is made; the answer says how it
    went, never with the secret or the other end's body."""
    probe = integrations.probe(workspace_id=workspaceId, integration_id=integrationId)
    if isinstance(probe, str):  # nothing to connect to
        return ok({"ok": False, "status": None, "latencyMs": 0, "reason": probe}, "Connection tested")
    outcome = webhook_delivery.exchange("GET", probe.url, probe.headers, None, timeout_s=TEST_TIMEOUT_S)
    return ok({"ok": outcome.succeeded, "status": outcome.status_code, "latencyMs": round(outcome.latency_ms),
               "reason": outcome.error}, "Connection tested")


def delete_integration(workspaceId: str, integrationId: str):
    integrations.delete(workspace_id=workspaceId, integration_id=integrationId)
    return deleted(integrationId, "Integration deleted")
