"""Handlers of the calls operations (see models.calls)."""
