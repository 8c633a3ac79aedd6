"""Handlers of chat sessions: testing a version of an agent or a workflow by typing to it."""
