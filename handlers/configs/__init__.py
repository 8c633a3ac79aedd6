"""Handlers of the configs operations (see models.configs)."""
