"""Syncs of agents and workflows to a runtime: createAgentSync, listAgentSyncs, getAgentSync,
createWorkflowSync, listWorkflowSyncs, getWorkflowSync."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import iso
from models.configs.tables import Agent, Workflow
from models.syncs import syncs
from models.syncs.syncs import SyncRecord


def sync_shape(record: SyncRecord) -> dict:
    response = None if record.response_status is None else {
        "status": record.response_status, "body": record.response_body,
        "latencyMs": round(record.response_latency_ms or 0.0)}
    return {"id": record.id, "workspaceId": record.workspace_id, f"{record.entity_type}Id": record.entity_id,
            "version": record.version_number, "versionId": record.version_id, "integrationId": record.integration_id,
            "status": record.status, "attempts": record.attempts, "response": response, "error": record.error,
            "requestedBy": record.requested_by, "createdAt": iso(record.created_at),
            "finishedAt": iso(record.finished_at)}


def _start(model, workspace_id: str, entity_id: str, body: dict, principal):
    record = syncs.start(model, principal, workspace_id=workspace_id, entity_id=entity_id,
                         integration_id=body["integrationId"], version=body.get("version"))
    return ok({"sync": sync_shape(record)}, "Sync queued")


def _list(model, workspace_id: str, entity_id: str, limit: int, offset: int, status: str | None):
    page = syncs.list_syncs(model, workspace_id=workspace_id, entity_id=entity_id, limit=limit, offset=offset,
                            status=status)
    return ok({"syncs": [sync_shape(r) for r in page.items], "pagination": page.pagination()})


def _get(model, workspace_id: str, entity_id: str, sync_id: str):
    return ok({"sync": sync_shape(syncs.get(model, workspace_id=workspace_id, entity_id=entity_id,
                                            sync_id=sync_id))})


def create_agent_sync(workspaceId: str, agentId: str, body: dict, principal):
    return _start(Agent, workspaceId, agentId, body, principal)


def list_agent_syncs(workspaceId: str, agentId: str, limit: int = 20, offset: int = 0, status: str | None = None):
    return _list(Agent, workspaceId, agentId, limit, offset, status)


def get_agent_sync(workspaceId: str, agentId: str, syncId: str):
    return _get(Agent, workspaceId, agentId, syncId)


def create_workflow_sync(workspaceId: str, workflowId: str, body: dict, principal):
    return _start(Workflow, workspaceId, workflowId, body, principal)


def list_workflow_syncs(workspaceId: str, workflowId: str, limit: int = 20, offset: int = 0,
                        status: str | None = None):
    return _list(Workflow, workspaceId, workflowId, limit, offset, status)


def get_workflow_sync(workspaceId: str, workflowId: str, syncId: str):
    return _get(Workflow, workspaceId, workflowId, syncId)
