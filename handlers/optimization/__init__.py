"""Handlers of optimization runs and their solutions."""
