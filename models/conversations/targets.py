"""What the agent side of a conversation speaks with: a version of an agent, or of a workflow.

An agent version's configuration is the agent side as it is. A workflow routes a call between
agents: its conversation is held by the first agent its graph reaches from the start node
(following each node's edges in order), with that agent's live version (its latest, when none is
live). A workflow that reaches no agent cannot hold a conversation.
"""
from __future__ import annotations

from typing import NamedTuple

from models.configs import entities, versioning
from models.configs.tables import Agent, Version
from models.conversations.engine import AgentScript
from models.kernel.errors import InvalidInput


class Target(NamedTuple):
    entity_type: str  # agent or workflow
    entity_id: str
    version_id: str
    version_number: int
    agent: AgentScript
    agent_id: str  # the agent that speaks (the entity itself, or the workflow's first agent)


def script_of(config: dict) -> AgentScript:
    model = config.get("model") or {}
    return AgentScript(prompt=config["prompt"], first_message=config.get("firstMessage") or "",
                       end_call_phrases=list(config.get("endCallPhrases") or []),
                       max_duration_s=int(config["maxDurationSeconds"]),
                       temperature=float(model.get("temperature", 0.7)), max_tokens=int(model.get("maxTokens", 1024)),
                       language=config.get("language") or "en")


def first_agent(config: dict) -> str | None:
    """The first agent a workflow's graph reaches from its start node, breadth first."""
    nodes = {node["id"]: node for node in config["nodes"]}
    following: dict[str, list[str]] = {}
    for edge in config["edges"]:
        following.setdefault(edge["from"], []).append(edge["to"])
    queue = [node["id"] for node in config["nodes"] if node["type"] == "start"]
    seen = set(queue)
    while queue:
        node = nodes[queue.pop(0)]
        if node["type"] == "agent" and node.get("agentId"):
            return node["agentId"]
        for nxt in following.get(node["id"], []):
            if nxt not in seen and nxt in nodes:
                seen.add(nxt)
                queue.append(nxt)
    return None


def resolve(*, workspace_id: str, entity_type: str, entity_id: str, version_id: str | None) -> Target:
    """The agent side of ``version_id`` of the entity (its live version, else its latest, when
    None); NotFound for an entity or version not of the workspace, InvalidInput for a workflow
    that reaches no agent."""
    model = entities.kind(entity_type)
    if version_id is None:
        entity = entities.get(model, workspace_id=workspace_id, entity_id=entity_id)
        version_id = entity.entity.published_version_id or entity.entity.head_version_id
        if version_id is None:
            raise InvalidInput(f"The {entity_type} {entity_id} has no version yet: save a configuration first.")
    record, config = versioning.get_version(model, workspace_id=workspace_id, entity_id=entity_id,
                                            version_id=version_id)
    if entity_type == "agent":
        return Target(entity_type, entity_id, record.id, record.version_number, script_of(config), entity_id)
    agent_id = first_agent(config)
    if agent_id is None:
        raise InvalidInput(f"Version {record.version_number} of the workflow {entity_id} reaches no agent from "
                           "its start node: a conversation needs one.")
    agent_version = Agent.in_workspace(workspace_id, Agent.published_version_id, Agent.head_version_id).where(
        Agent.id == agent_id).first()
    live = agent_version and (agent_version.published_version_id or agent_version.head_version_id)
    if not live:
        raise InvalidInput(f"The agent {agent_id} that the workflow {entity_id} reaches first has no version.")
    agent_config = Version.in_workspace(workspace_id, Version.config).where(Version.id == live).scalar()
    return Target(entity_type, entity_id, record.id, record.version_number, script_of(agent_config), agent_id)
