"""Handlers of the telephony operations (see models.telephony)."""
