"""Handlers of the billing operations (see models.billing)."""
