"""Handlers of the identity operations (see models.identity)."""
