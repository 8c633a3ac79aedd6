"""Handlers of knowledge bases."""
