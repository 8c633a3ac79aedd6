"""A call's structured data (getCallStructuredData, setCallStructuredData)."""
from __future__ import annotations

from api.envelope import ok
from models.calls import insights


def get_call_structured_data(workspaceId: str, callId: str):
    return ok({"callId": callId, "structuredData": insights.call_values(workspace_id=workspaceId, call_id=callId)})


def set_call_structured_data(workspaceId: str, callId: str, body: dict):
    values = insights.set_call_values(workspace_id=workspaceId, call_id=callId, values=body["structuredData"])
    return ok({"callId": callId, "structuredData": values}, "Structured data set")
