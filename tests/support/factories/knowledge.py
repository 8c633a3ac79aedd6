"""Knowledge bases and their articles, made through the domain as the API makes them."""
from __future__ import annotations

import itertools

from models.kernel.db import session
from tests.support.factories.identity import Actor, principal

_names = itertools.count(1)


def knowledge_base(actor: Actor, name: str | None = None, description: str | None = None) -> str:
    """A knowledge base of the actor's workspace (named "Knowledge base <n>" unless ``name`` is given); its id."""
    from models.knowledge import knowledge_bases
    with session():
        return knowledge_bases.create_knowledge_base(principal(actor), workspace_id=actor.workspace_id,
                                                     name=name or f"Knowledge base {next(_names)}",
                                                     description=description).id


def article(actor: Actor, knowledge_base_id: str, title: str = "Refunds",
            body: str = "Refunds are paid back to the card within five working days.") -> str:
    """An article of the knowledge base, indexed for search; its id."""
    from models.knowledge import knowledge_bases
    with session():
        return knowledge_bases.create_article(principal(actor), workspace_id=actor.workspace_id,
                                              knowledge_base_id=knowledge_base_id, title=title, body=body).id


def attachment(actor: Actor, agent_id: str, knowledge_base_id: str) -> str:
    """The knowledge base attached to the agent (both of the actor's workspace), as retrieval for the
    agent then searches it; the knowledge base's id."""
    from models.knowledge import agents
    with session():
        return agents.attach(principal(actor), workspace_id=actor.workspace_id, agent_id=agent_id,
                             knowledge_base_id=knowledge_base_id).id
