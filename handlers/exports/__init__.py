"""Handlers of whole-workspace exports."""
