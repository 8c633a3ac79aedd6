"""The table of dashboard widgets (models.dashboards)."""
from __future__ import annotations

from peewee import CharField, DateTimeField, IntegerField, TextField

from models.kernel.db import JSONField, new_id, utcnow
from models.kernel.scoping import WorkspaceScoped


class Widget(WorkspaceScoped):
    """A chart on a dashboard: named once per dashboard without regard to case."""
    id = CharField(primary_key=True, default=new_id)
    dashboard = TextField()
    dashboard_key = TextField()  # the dashboard's name folded to lower case: a dashboard without regard to case
    name = TextField()
    name_key = TextField()  # the name folded to lower case: unique per dashboard
    source = CharField(max_length=32)  # calls | structured-data
    metric = CharField(max_length=32, null=True)  # calls: the figure charted
    field_id = IntegerField(null=True)  # structured-data: the field (kept when it is deleted: the data says so)
    aggregation = CharField(max_length=32, null=True)  # structured-data: the figure of the field charted
    filters = JSONField()  # {agentId?, callType?}
    group_by = CharField(max_length=16, null=True)
    granularity = CharField(max_length=16)
    range_last = IntegerField()  # the range: the last range_last range_units up to now
    range_unit = CharField(max_length=16)
    chart_type = CharField(max_length=16)
    x = IntegerField()
    y = IntegerField()
    w = IntegerField()
    h = IntegerField()
    created_by = CharField()
    created_at = DateTimeField(default=utcnow)
    updated_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = (
            (("workspace", "dashboard_key", "name_key"), True),
            # The list's order: by dashboard, then row by row, left to right.
            (("workspace", "dashboard_key", "y", "x", "id"), False),
        )
