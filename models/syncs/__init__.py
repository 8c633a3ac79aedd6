"""Syncs: an agent's or a workflow's configuration pushed to the workspace's agent runtime."""
