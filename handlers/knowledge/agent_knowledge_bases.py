"""The knowledge bases attached to an agent: listAgentKnowledgeBases, attachAgentKnowledgeBase,
detachAgentKnowledgeBase."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import deleted, iso
from models.knowledge import agents
from models.knowledge.agents import AttachedKnowledgeBase


def attached_shape(record: AttachedKnowledgeBase) -> dict:
    return {"id": record.id, "workspaceId": record.workspace_id, "name": record.name,
            "description": record.description, "createdBy": record.created_by, "createdAt": iso(record.created_at),
            "updatedAt": iso(record.updated_at), "agentId": record.agent_id, "attachedBy": record.attached_by,
            "attachedAt": iso(record.attached_at)}


def list_agent_knowledge_bases(workspaceId: str, agentId: str, limit: int = 20, offset: int = 0):
    page = agents.list_attached(workspace_id=workspaceId, agent_id=agentId, limit=limit, offset=offset)
    return ok({"knowledgeBases": [attached_shape(r) for r in page.items], "pagination": page.pagination()})


def attach_agent_knowledge_base(workspaceId: str, agentId: str, knowledgeBaseId: str, principal):
    record = agents.attach(principal, workspace_id=workspaceId, agent_id=agentId, knowledge_base_id=knowledgeBaseId)
    return ok({"knowledgeBase": attached_shape(record)}, "Knowledge base attached")


def detach_agent_knowledge_base(workspaceId: str, agentId: str, knowledgeBaseId: str):
    agents.detach(workspace_id=workspaceId, agent_id=agentId, knowledge_base_id=knowledgeBaseId)
    return deleted(knowledgeBaseId, "Knowledge base detached")
