"""Configs: agents (with their versions) and workflows, made through the domain as the API makes them."""
from __future__ import annotations

import itertools

from models.kernel.db import session
from tests.support.factories.identity import Actor, principal


def agent(actor: Actor, name: str = "agent", config: dict | None = None) -> str:
    """A new agent of the actor's workspace (version 1 published); its id."""
    from models.configs import entities
    from models.configs.tables import Agent
    with session():
        return entities.create(Agent, principal(actor), workspace_id=actor.workspace_id, name=name,
                               config=config).entity.id


def workflow(actor: Actor, agent_ids: list[str] = (), name: str = "workflow") -> str:
    """A new workflow routing start -> each agent in turn -> end; its id."""
    from models.configs import entities
    from models.configs.tables import Workflow
    nodes = [{"id": "start", "type": "start"}] + [{"id": f"a{i}", "type": "agent", "agentId": agent_id}
                                                  for i, agent_id in enumerate(agent_ids)] + [{"id": "end", "type": "end"}]
    edges = [{"from": a["id"], "to": b["id"]} for a, b in itertools.pairwise(nodes)]
    with session():
        return entities.create(Workflow, principal(actor), workspace_id=actor.workspace_id, name=name,
                               config={"nodes": nodes, "edges": edges}).entity.id


def save_versions(actor: Actor, agent_id: str, count: int) -> None:
    """``count`` more main-line versions of the agent, each with another prompt."""
    from models.configs import entities
    from models.configs.tables import Agent
    with session():
        for i in range(count):
            entities.update(Agent, principal(actor), workspace_id=actor.workspace_id, entity_id=agent_id,
                            config={"prompt": f"Prompt number {i}"})
