"""Dashboard widgets: createWidget, listWidgets, getWidget, updateWidget, deleteWidget, getWidgetData."""
from __future__ import annotations

from api.envelope import ok
from handlers.calls.analytics import analytics_shape
from handlers.calls.call_metrics import metrics_shape
from handlers.wire import deleted, iso
from models.dashboards import widgets
from models.dashboards.widgets import WidgetRecord

# The fields a body may carry, by their names on the wire and in the domain.
_FIELDS = {"name": "name", "dashboard": "dashboard", "source": "source", "metric": "metric", "fieldId": "field_id",
           "aggregation": "aggregation", "filters": "filters", "groupBy": "group_by", "granularity": "granularity",
           "range": "range", "chartType": "chart_type", "position": "position"}


def widget_shape(record: WidgetRecord) -> dict:
    return {"id": record.id, "workspaceId": record.workspace_id, "dashboard": record.dashboard, "name": record.name,
            "source": record.source, "metric": record.metric, "fieldId": record.field_id,
            "aggregation": record.aggregation, "filters": record.filters, "groupBy": record.group_by,
            "granularity": record.granularity, "range": {"last": record.range_last, "unit": record.range_unit},
            "chartType": record.chart_type, "position": {"x": record.x, "y": record.y, "w": record.w, "h": record.h},
            "createdBy": record.created_by, "createdAt": iso(record.created_at), "updatedAt": iso(record.updated_at)}


def _given(body: dict) -> dict:
    return {name: body[key] for key, name in _FIELDS.items() if key in body}


def create_widget(workspaceId: str, body: dict, principal):
    record = widgets.create_widget(principal, workspace_id=workspaceId, **_given(body))
    return ok({"widget": widget_shape(record)}, "Widget created")


def list_widgets(workspaceId: str, limit: int = 20, offset: int = 0, dashboard: str | None = None):
    page = widgets.list_widgets(workspace_id=workspaceId, limit=limit, offset=offset, dashboard=dashboard)
    return ok({"widgets": [widget_shape(w) for w in page.items], "pagination": page.pagination()})


def get_widget(workspaceId: str, widgetId: str):
    return ok({"widget": widget_shape(widgets.get_widget(workspace_id=workspaceId, widget_id=widgetId))})


def update_widget(workspaceId: str, widgetId: str, body: dict):
    record = widgets.update_widget(workspace_id=workspaceId, widget_id=widgetId, **_given(body))
    return ok({"widget": widget_shape(record)}, "Widget updated")


def delete_widget(workspaceId: str, widgetId: str):
    widgets.delete_widget(workspace_id=workspaceId, widget_id=widgetId)
    return deleted(widgetId, "Widget deleted")


def get_widget_data(workspaceId: str, widgetId: str):
    data = widgets.widget_data(workspace_id=workspaceId, widget_id=widgetId)
    if data.calls is not None:
        return ok({"widget": widget_shape(data.widget), "callMetrics": metrics_shape(workspaceId, data.calls)})
    return ok({"widget": widget_shape(data.widget),
               "structuredData": analytics_shape(workspaceId, data.structured_data)})
