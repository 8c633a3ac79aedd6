"""Handlers of the audit operations (see models.audit)."""
