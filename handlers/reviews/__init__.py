"""Handlers of reviews and their assignees."""
