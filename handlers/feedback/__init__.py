"""Handlers of feedback: the feedback itself, its assignees, comments, references and the
workspace's feedback statuses."""
