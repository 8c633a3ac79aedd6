"""Handlers of the models a workspace may use."""
