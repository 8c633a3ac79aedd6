"""Dashboards: a workspace's widgets, each a chart of call metrics or of a structured-data field
over a range relative to now, placed on a grid of a named dashboard."""
