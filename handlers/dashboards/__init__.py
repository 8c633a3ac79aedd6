"""Handlers of dashboards."""
