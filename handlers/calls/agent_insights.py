"""The agent insights group: which structured-data fields an agent's calls carry
(getAgentInsights, setAgentInsights)."""
from __future__ import annotations

from api.envelope import ok
from models.calls import insights

from .insights import insight_shape


def get_agent_insights(workspaceId: str, agentId: str):
    fields = insights.agent_fields(workspace_id=workspaceId, agent_id=agentId)
    return ok({"agentId": agentId, "insights": [insight_shape(f) for f in fields]})


def set_agent_insights(workspaceId: str, agentId: str, body: dict):
    fields = insights.set_agent_fields(workspace_id=workspaceId, agent_id=agentId, field_ids=body["insightIds"])
    return ok({"agentId": agentId, "insights": [insight_shape(f) for f in fields]}, "Agent insights set")
