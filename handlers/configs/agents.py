"""Agents: createAgent, listAgents, getAgent, updateAgent, deleteAgent (shared with workflows in
handlers.entities)."""
from models.configs.tables import Agent

from .entities import EntityHandlers

_agents = EntityHandlers(Agent, "agent", "agents", "Agent")


def create_agent(body: dict, workspaceId: str, principal):
    return _agents.create(body, workspaceId, principal)


def list_agents(workspaceId: str, limit: int = 20, offset: int = 0):
    return _agents.list(workspaceId, limit, offset)


def get_agent(agentId: str, workspaceId: str):
    return _agents.get(agentId, workspaceId)


def update_agent(agentId: str, body: dict, workspaceId: str, principal):
    return _agents.update(agentId, body, workspaceId, principal)


def delete_agent(agentId: str, workspaceId: str):
    return _agents.delete(agentId, workspaceId)
