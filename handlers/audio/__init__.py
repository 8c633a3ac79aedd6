"""Handlers of the workspace audio library."""
