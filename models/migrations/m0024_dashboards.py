"""Dashboards: widgets charting call metrics or a structured-data field

A widget's name is unique per dashboard of the workspace without regard to case (a unique index
on the folded dashboard and widget names); the second index serves the list, by dashboard and
grid position. A structured-data widget names its field by id without a foreign key: a field
deleted later leaves the widget, whose data then says so.
"""

STATEMENTS = (
    """CREATE TABLE widget (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        dashboard TEXT NOT NULL,
        dashboard_key TEXT NOT NULL,
        name TEXT NOT NULL,
        name_key TEXT NOT NULL,
        source VARCHAR(32) NOT NULL,
        metric VARCHAR(32),
        field_id INTEGER,
        aggregation VARCHAR(32),
        filters TEXT NOT NULL,
        group_by VARCHAR(16),
        granularity VARCHAR(16) NOT NULL,
        range_last INTEGER NOT NULL,
        range_unit VARCHAR(16) NOT NULL,
        chart_type VARCHAR(16) NOT NULL,
        x INTEGER NOT NULL,
        y INTEGER NOT NULL,
        w INTEGER NOT NULL,
        h INTEGER NOT NULL,
        created_by VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL)""",
    "CREATE UNIQUE INDEX widget_workspace_id_dashboard_key_name_key ON widget (workspace_id, dashboard_key, name_key)",
    "CREATE INDEX widget_workspace_id_dashboard_key_y_x_id ON widget (workspace_id, dashboard_key, y, x, id)",
)
