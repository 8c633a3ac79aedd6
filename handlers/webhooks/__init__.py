"""Handlers of the webhooks operations (see models.webhooks)."""
