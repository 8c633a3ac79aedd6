"""The insights group: structured-data fields (createInsight, listInsights, getInsight,
updateInsight, deleteInsight) and their wire shape."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import deleted, iso
from models.calls import insights
from models.calls.insights import FieldRecord


def insight_shape(field: FieldRecord) -> dict:
    return {"id": field.id, "name": field.name, "type": field.type, "enumValues": field.enum_values,
            "description": field.description, "createdAt": iso(field.created_at), "updatedAt": iso(field.updated_at)}


def create_insight(workspaceId: str, body: dict):
    field = insights.create_field(workspace_id=workspaceId, name=body["name"], type=body["type"],
                                  enum_values=body.get("enumValues"), description=body.get("description"))
    return ok({"insight": insight_shape(field)}, "Field created")


def list_insights(workspaceId: str, limit: int = 20, offset: int = 0):
    page = insights.list_fields(workspace_id=workspaceId, limit=limit, offset=offset)
    return ok({"insights": [insight_shape(f) for f in page.items], "pagination": page.pagination()})


def get_insight(workspaceId: str, insightId: int):
    return ok({"insight": insight_shape(insights.get_field(workspace_id=workspaceId, field_id=insightId))})


def update_insight(workspaceId: str, insightId: int, body: dict):
    changes = {key: body[wire] for key, wire in (("enum_values", "enumValues"), ("description", "description"))
               if wire in body}
    field = insights.update_field(workspace_id=workspaceId, field_id=insightId, name=body.get("name"),
                                  type=body.get("type"), **changes)
    return ok({"insight": insight_shape(field)}, "Field updated")


def delete_insight(workspaceId: str, insightId: int):
    insights.delete_field(workspace_id=workspaceId, field_id=insightId)
    return deleted(insightId, "Field deleted")
