"""Handlers of the campaigns operations (see models.campaigns)."""
