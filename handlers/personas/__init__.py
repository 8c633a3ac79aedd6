"""Handlers of personas."""
