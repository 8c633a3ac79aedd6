"""Dashboard widgets: a chart of call metrics or of a structured-data field, over a range relative
to now, placed on the grid of a named dashboard.

A widget of calls charts one of the call metrics (``models.calls.metrics``); a widget of structured
data, one aggregation of one field (``models.calls.analytics``). Its data is what those modules
answer for the widget's range, granularity and filters, computed by the same functions as
GET /call/metrics and GET /analytics/structured-data: never a copy of their figures.

The rules: a name unique per dashboard without regard to case (a unique index: two writes at once
get one row and one 409); at most 100 widgets per workspace (the workspace's row, written first,
orders concurrent creations, so the cap holds on PostgreSQL with several processes); a range of
1 to 1000 hours, days or months back from now that spans at most 10,000 buckets of the
granularity; a position on a grid 12 columns wide. Filters name an agent of the workspace (400
naming filters.agentId otherwise: another workspace's agent is no agent here) and a call type.
"""
from __future__ import annotations

import functools
from datetime import datetime, timedelta
from typing import NamedTuple

from peewee import IntegrityError, fn

from models.calls import analytics, metrics
from models.calls.calls import CALL_TYPES
from models.calls.tables import StructuredField
from models.configs.tables import Agent
from models.dashboards.tables import Widget
from models.identity.principal import Principal
from models.kernel.db import database, is_postgres, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.pagination import Page, workspace_list
from models.kernel.scoping import Workspace
from models.kernel.sql import Prepared
from models.kernel.text import text_problem

SOURCES = ("calls", "structured-data")
# What a widget of calls charts: a figure of each bucket of the call metrics.
CALL_METRICS = ("count", "answered", "completed", "answerRate", "completionRate", "durationAvg", "durationP50",
                "durationP90", "endReasons")
# What a widget of structured data charts: a figure of the field's analytics.
AGGREGATIONS = ("count", "avg", "sum", "min", "max", "trueCount", "falseCount", "trueRate", "valueCounts")
CHART_TYPES = ("line", "bar", "area", "pie", "number", "table")
RANGE_UNITS = ("hour", "day", "month")
MAX_RANGE_LAST = 1000
DEFAULT_RANGE = {"last": 7, "unit": "day"}
GRID_COLUMNS = 12
MAX_Y = 999
MAX_H = 24
DEFAULT_W, DEFAULT_H = 6, 4
MAX_PER_WORKSPACE = 100
NAME_MAX_CHARS = 100
DASHBOARD_MAX_CHARS = 100
DEFAULT_DASHBOARD = "default"
# Hours in a unit of range at most, and in a bucket at least: the bound on the buckets of a range,
# whatever now is.
_MOST_HOURS = {"hour": 1, "day": 24, "month": 31 * 24}
_LEAST_HOURS = {"hour": 1, "day": 24, "month": 28 * 24}


class WidgetRecord(NamedTuple):
    id: str
    workspace_id: str
    dashboard: str
    name: str
    source: str
    metric: str | None
    field_id: int | None
    aggregation: str | None
    filters: dict
    group_by: str | None
    granularity: str
    range_last: int
    range_unit: str
    chart_type: str
    x: int
    y: int
    w: int
    h: int
    created_by: str
    created_at: datetime
    updated_at: datetime


class WidgetData(NamedTuple):
    widget: WidgetRecord
    calls: metrics.Metrics | None  # a widget of calls
    structured_data: analytics.Analytics | None  # a widget of structured data


_W = Widget
_COLUMNS = (_W.id, _W.workspace, _W.dashboard, _W.name, _W.source, _W.metric, _W.field_id, _W.aggregation, _W.filters,
            _W.group_by, _W.granularity, _W.range_last, _W.range_unit, _W.chart_type, _W.x, _W.y, _W.w, _W.h,
            _W.created_by, _W.created_at, _W.updated_at)
_ONE = Prepared(lambda workspace_id, widget_id: _W.in_workspace(workspace_id, *_COLUMNS).where(_W.id == widget_id))
# The fields a write may give, by their names in the domain; position and range are objects.
FIELDS = ("name", "dashboard", "source", "metric", "field_id", "aggregation", "filters", "group_by", "granularity",
          "range", "chart_type", "position")


@functools.cache
def _page(names: tuple[str, ...]):
    # By dashboard, then row by row and left to right: the order a dashboard is drawn in.
    return workspace_list(_W, _COLUMNS, order_by=(_W.dashboard_key, _W.y, _W.x, _W.id), names=names,
                          where=lambda params: [_W.dashboard_key == params["dashboard"]] if names else [])


# --- the rules -----------------------------------------------------------------------------------

def _text(value, field: str, max_chars: int) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be text.")
    if problem := text_problem(value):
        raise InvalidInput(f"{field} {problem}.")
    value = value.strip()
    if not 1 <= len(value) <= max_chars:
        raise InvalidInput(f"{field} must be 1 to {max_chars} characters once trimmed; {len(value)} given.")
    return value


def _one_of(value, field: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise InvalidInput(f"{field} must be one of {', '.join(allowed)}.")
    return value


def _bounded_int(value, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(f"{field} must be an integer from {low} to {high}.")
    return value


def _filters(workspace_id: str, value) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict) or set(value) - {"agentId", "callType"}:
        raise InvalidInput("filters may hold agentId and callType only.")
    found = {}
    if value.get("agentId") is not None:
        agent_id = value["agentId"]
        if not isinstance(agent_id, str) or Agent.in_workspace(workspace_id, Agent.id).where(
                Agent.id == agent_id).scalar() is None:
            raise InvalidInput("filters.agentId names no agent of this workspace.")
        found["agentId"] = agent_id
    if value.get("callType") is not None:
        found["callType"] = _one_of(value["callType"], "filters.callType", CALL_TYPES)
    return found


def _range(value, granularity: str) -> tuple[int, str]:
    if not isinstance(value, dict) or set(value) != {"last", "unit"}:
        raise InvalidInput("range must be {last, unit}: the last 1 to 1000 hours, days or months.")
    last = _bounded_int(value["last"], "range.last", 1, MAX_RANGE_LAST)
    unit = _one_of(value["unit"], "range.unit", RANGE_UNITS)
    if granularity != "total":
        most = -(-last * _MOST_HOURS[unit] // _LEAST_HOURS[granularity]) + 1
        if most > metrics.MAX_BUCKETS:
            raise InvalidInput(f"range of the last {last} {unit}s spans up to {most} {granularity} buckets; at most "
                               f"{metrics.MAX_BUCKETS} are allowed: shorten the range or take a coarser granularity.")
    return last, unit


def _position(value) -> dict:
    if not isinstance(value, dict) or set(value) != {"x", "y", "w", "h"}:
        raise InvalidInput("position must be {x, y, w, h}.")
    position = {"x": _bounded_int(value["x"], "position.x", 0, GRID_COLUMNS - 1),
                "y": _bounded_int(value["y"], "position.y", 0, MAX_Y),
                "w": _bounded_int(value["w"], "position.w", 1, GRID_COLUMNS),
                "h": _bounded_int(value["h"], "position.h", 1, MAX_H)}
    if position["x"] + position["w"] > GRID_COLUMNS:
        raise InvalidInput(f"position.x + position.w must be at most {GRID_COLUMNS}, the grid's columns; "
                           f"{position['x']} + {position['w']} given.")
    return position


def _checked(workspace_id: str, given: dict) -> dict:
    """The columns of a widget of the values ``given`` (every field, defaults applied)."""
    source = _one_of(given["source"], "source", SOURCES)
    granularity = _one_of(given.get("granularity") or "day", "granularity", metrics.GRANULARITIES)
    columns = {"name": _text(given["name"], "name", NAME_MAX_CHARS),
               "dashboard": _text(given.get("dashboard") or DEFAULT_DASHBOARD, "dashboard", DASHBOARD_MAX_CHARS),
               "source": source, "granularity": granularity,
               "filters": _filters(workspace_id, given.get("filters")),
               "chart_type": _one_of(given.get("chart_type") or "line", "chartType", CHART_TYPES),
               "group_by": None if given.get("group_by") is None else _one_of(given["group_by"], "groupBy",
                                                                               metrics.GROUP_BY)}
    columns["range_last"], columns["range_unit"] = _range(given.get("range") or DEFAULT_RANGE, granularity)
    if source == "calls":
        if given.get("field_id") is not None or given.get("aggregation") is not None:
            raise InvalidInput("fieldId and aggregation are for widgets of source structured-data; a widget of "
                               "calls names a metric.")
        if given.get("metric") is None:
            raise InvalidInput(f"metric is required for a widget of calls: one of {', '.join(CALL_METRICS)}.")
        columns.update(metric=_one_of(given["metric"], "metric", CALL_METRICS), field_id=None, aggregation=None)
    else:
        if given.get("metric") is not None or columns["group_by"] is not None:
            raise InvalidInput("metric and groupBy are for widgets of source calls; a widget of structured data "
                               "names a fieldId and an aggregation.")
        if given.get("field_id") is None or given.get("aggregation") is None:
            raise InvalidInput("fieldId and aggregation are required for a widget of structured data.")
        if granularity == "total":
            raise InvalidInput("granularity total is for widgets of calls; structured data takes hour, day or month.")
        field_id = _bounded_int(given["field_id"], "fieldId", 1, 2_147_483_647)
        if StructuredField.in_workspace(workspace_id, StructuredField.id).where(
                StructuredField.id == field_id).scalar() is None:
            raise InvalidInput(f"fieldId {field_id} names no structured-data field of this workspace.")
        columns.update(metric=None, field_id=field_id,
                       aggregation=_one_of(given["aggregation"], "aggregation", AGGREGATIONS))
    columns["name_key"], columns["dashboard_key"] = columns["name"].lower(), columns["dashboard"].lower()
    if given.get("position") is not None:
        columns.update(_position(given["position"]))
    return columns


def _name_taken(workspace_id: str, columns: dict, widget_id: str | None = None) -> Conflict:
    """The 409 of a write the unique index refused, naming the widget holding the name."""
    holder = _W.in_workspace(workspace_id, _W.id, _W.name).where(
        (_W.dashboard_key == columns["dashboard_key"]) & (_W.name_key == columns["name_key"])
        & (_W.id != (widget_id or ""))).tuples().first()
    if holder is None:
        return Conflict(f"The name {columns['name']!r} was taken by another widget written at the same time; "
                        "try again.")
    return Conflict(f"A widget named {holder[1]!r} is on dashboard {columns['dashboard']!r} already ({holder[0]}); "
                    "names are unique per dashboard without regard to case.")


def _record_values(record: WidgetRecord) -> dict:
    """A widget's values as a write gives them, to merge a change onto."""
    return {"name": record.name, "dashboard": record.dashboard, "source": record.source, "metric": record.metric,
            "field_id": record.field_id, "aggregation": record.aggregation, "filters": record.filters,
            "group_by": record.group_by, "granularity": record.granularity,
            "range": {"last": record.range_last, "unit": record.range_unit}, "chart_type": record.chart_type,
            "position": {"x": record.x, "y": record.y, "w": record.w, "h": record.h}}


# --- operations ----------------------------------------------------------------------------------

def create_widget(principal: Principal, *, workspace_id: str, **given) -> WidgetRecord:
    """A widget of the workspace; without a position, a new row at the bottom of its dashboard, half
    the grid wide. 409 past MAX_PER_WORKSPACE, or naming the widget holding its name."""
    columns = _checked(workspace_id, given)
    now = utcnow()
    try:
        with database.atomic():
            # The workspace's row, written first, orders concurrent creations: the cap holds.
            Workspace.update(id=Workspace.id).where(Workspace.id == workspace_id).execute()
            if _W.in_workspace(workspace_id).count() >= MAX_PER_WORKSPACE:
                raise Conflict(f"A workspace has at most {MAX_PER_WORKSPACE} widgets; delete one first.")
            if "x" not in columns:
                bottom = _W.in_workspace(workspace_id, fn.MAX(_W.y + _W.h)).where(
                    _W.dashboard_key == columns["dashboard_key"]).scalar() or 0
                columns.update(x=0, y=min(bottom, MAX_Y), w=DEFAULT_W, h=DEFAULT_H)
            with database.atomic():  # a savepoint: a refused insert leaves the caller's transaction whole
                row = _W.create(workspace=workspace_id, created_by=principal.user_id, created_at=now,
                                updated_at=now, **columns)
    except IntegrityError:
        raise _name_taken(workspace_id, columns) from None
    return get_widget(workspace_id=workspace_id, widget_id=row.id)


def list_widgets(*, workspace_id: str, limit: int, offset: int, dashboard: str | None = None) -> Page[WidgetRecord]:
    """The workspace's widgets by dashboard (without regard to case) and grid position, top to bottom
    and left to right; ``dashboard`` keeps one dashboard's. One statement per page."""
    values = {} if dashboard is None else {"dashboard": dashboard.strip().lower()}
    return _page(tuple(sorted(values))).page(WidgetRecord, workspace_id=workspace_id, limit=limit, offset=offset,
                                             **values)


def get_widget(*, workspace_id: str, widget_id: str) -> WidgetRecord:
    record = _ONE.first(WidgetRecord, workspace_id=workspace_id, widget_id=widget_id)
    if record is None:
        raise NotFound(f"No widget {widget_id} in this workspace.")
    return record


def update_widget(*, workspace_id: str, widget_id: str, **given) -> WidgetRecord:
    """The fields given, merged onto the widget's (a position's coordinates one by one), then held to
    the rules of a new widget as a whole: a widget turned to structured data names its field and
    aggregation, and clears its metric (null) in the same change."""
    with database.atomic():
        query = _W.in_workspace(workspace_id, _W.id).where(_W.id == widget_id)
        if (query.for_update() if is_postgres() else query).scalar() is None:
            raise NotFound(f"No widget {widget_id} in this workspace.")
        merged = _record_values(get_widget(workspace_id=workspace_id, widget_id=widget_id))
        if isinstance(given.get("position"), dict):
            given = {**given, "position": {**merged["position"], **given["position"]}}
        merged.update(given)
        columns = _checked(workspace_id, merged)
        try:
            with database.atomic():
                _W.update(updated_at=utcnow(), **columns).where(_W.id == widget_id).execute()
        except IntegrityError:
            raise _name_taken(workspace_id, columns, widget_id) from None
    return get_widget(workspace_id=workspace_id, widget_id=widget_id)


def delete_widget(*, workspace_id: str, widget_id: str) -> None:
    with database.atomic():
        if not _W.delete().where((_W.workspace == workspace_id) & (_W.id == widget_id)).execute():
            raise NotFound(f"No widget {widget_id} in this workspace.")


def widget_range(record: WidgetRecord, now: datetime) -> tuple[datetime, datetime]:
    """The widget's range ending ``now`` (to the second, so that the range the data states, in
    milliseconds, is the one measured): the last range_last hours, days or calendar months."""
    end = now.replace(microsecond=0)
    if record.range_unit == "hour":
        return end - timedelta(hours=record.range_last), end
    if record.range_unit == "day":
        return end - timedelta(days=record.range_last), end
    months = end.year * 12 + end.month - 1 - record.range_last
    year, month = divmod(months, 12)
    first_of_next = datetime(year + (month + 1) // 12, (month + 1) % 12 + 1, 1)
    last_day = (first_of_next - timedelta(days=1)).day
    return end.replace(year=year, month=month + 1, day=min(end.day, last_day)), end


def widget_data(*, workspace_id: str, widget_id: str, now: datetime | None = None) -> WidgetData:
    """What the widget charts, over its range ending now: the call metrics, or the field's analytics,
    as GET /call/metrics and GET /analytics/structured-data answer them for the same query. 409 for a
    widget whose field was deleted since."""
    record = get_widget(workspace_id=workspace_id, widget_id=widget_id)
    start, end = widget_range(record, now or utcnow())
    agent_id, call_type = record.filters.get("agentId"), record.filters.get("callType")
    if record.source == "calls":
        return WidgetData(record, metrics.call_metrics(metrics.Query(
            workspace_id, start, end, record.granularity, record.group_by, agent_id, call_type)), None)
    if StructuredField.in_workspace(workspace_id, StructuredField.id).where(
            StructuredField.id == record.field_id).scalar() is None:
        raise Conflict(f"The widget's structured-data field {record.field_id} was deleted; give the widget another "
                       "fieldId.")
    return WidgetData(record, None, analytics.structured_data(
        workspace_id=workspace_id, start=start, end=end, granularity=record.granularity, call_type=call_type,
        agent_id=agent_id, field_ids=[record.field_id]))
