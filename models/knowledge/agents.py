"""The knowledge bases attached to an agent: what retrieval searches for it (models.knowledge.retrieval).

Attaching a knowledge base an agent has already changes nothing and answers the same; two attaches
at once leave one link (a unique index backs it, and the loser reads the winner's). Both rows must
be the workspace's (NotFound naming the one that is not). Deleting the agent or the knowledge base
deletes its links: the foreign keys cascade, so no deletion path needs to know about them, and an
attach racing a deletion either fails its foreign key (NotFound, as if it came after) or is made
first and deleted with it.

An agent's list is by attaching time (the index's order), one statement per page.
"""
from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from peewee import JOIN, IntegrityError, fn

from models.configs.tables import Agent
from models.identity.principal import Principal
from models.kernel.db import database, utcnow
from models.kernel.errors import NotFound
from models.kernel.pagination import Page, PageQuery
from models.kernel.scoping import same_workspace
from models.knowledge import knowledge_bases
from models.knowledge.tables import KnowledgeBase, KnowledgeBaseAgent


class AttachedKnowledgeBase(NamedTuple):
    id: str
    workspace_id: str
    name: str
    description: str | None
    created_by: str
    created_at: datetime
    updated_at: datetime
    agent_id: str
    attached_by: str
    attached_at: datetime


_L, _K = KnowledgeBaseAgent, KnowledgeBase
_COLUMNS = (_K.id, _K.workspace, _K.name, _K.description, _K.created_by, _K.created_at, _K.updated_at, _L.agent,
            _L.attached_by, _L.attached_at)


def _joined(query):
    return query.join(_K, on=same_workspace(_K.id == _L.knowledge_base, _K, _L))


_PAGE = PageQuery(
    lambda workspace_id, agent_id, limit, offset: _joined(_L.in_workspace(workspace_id, *_COLUMNS))
    .where(_L.agent == agent_id).order_by(_L.attached_at, _L.id).limit(limit).offset(offset),
    lambda workspace_id, agent_id: _L.in_workspace(workspace_id, fn.COUNT(_L.id)).where(_L.agent == agent_id),
)


def require_agent(workspace_id: str, agent_id: str) -> None:
    if Agent.in_workspace(workspace_id, Agent.id).where(Agent.id == agent_id).scalar() is None:
        raise NotFound(f"agentId: no agent {agent_id} in this workspace.")


def _one(workspace_id: str, agent_id: str, knowledge_base_id: str) -> AttachedKnowledgeBase | None:
    row = (_joined(_L.in_workspace(workspace_id, *_COLUMNS))
           .where((_L.agent == agent_id) & (_L.knowledge_base == knowledge_base_id)).tuples().first())
    return None if row is None else AttachedKnowledgeBase._make(row)


def attach(principal: Principal, *, workspace_id: str, agent_id: str,
           knowledge_base_id: str) -> AttachedKnowledgeBase:
    """The knowledge base attached to the agent (the link it has already, if any)."""
    with database.atomic():
        found = _one(workspace_id, agent_id, knowledge_base_id)
        if found is not None:
            return found
        require_agent(workspace_id, agent_id)
        knowledge_bases.get_knowledge_base(workspace_id=workspace_id, knowledge_base_id=knowledge_base_id)
        try:
            with database.atomic():  # a savepoint: a twin's insert leaves the request's transaction whole
                _L.create(workspace=workspace_id, agent=agent_id, knowledge_base=knowledge_base_id,
                          attached_by=principal.user_id, attached_at=utcnow())
        except IntegrityError:
            pass  # a twin attached it first, or a deletion took the agent or knowledge base meanwhile
        found = _one(workspace_id, agent_id, knowledge_base_id)
    if found is None:
        require_agent(workspace_id, agent_id)
        raise NotFound(f"No knowledge base {knowledge_base_id} in this workspace.")
    return found


def detach(*, workspace_id: str, agent_id: str, knowledge_base_id: str) -> None:
    if not _L.delete().where((_L.workspace == workspace_id) & (_L.agent == agent_id)
                             & (_L.knowledge_base == knowledge_base_id)).execute():
        require_agent(workspace_id, agent_id)
        raise NotFound(f"Knowledge base {knowledge_base_id} is not attached to agent {agent_id}.")


def list_attached(*, workspace_id: str, agent_id: str, limit: int, offset: int) -> Page[AttachedKnowledgeBase]:
    """The agent's knowledge bases, first attached first; NotFound for an agent not of the workspace.
    One statement for a page with rows."""
    page = _PAGE.page(AttachedKnowledgeBase, limit=limit, offset=offset, workspace_id=workspace_id,
                      agent_id=agent_id)
    if not page.items:
        require_agent(workspace_id, agent_id)
    return page


def attached_ids(workspace_id: str, agent_id: str) -> list[str]:
    """The ids of the agent's knowledge bases, in one statement; NotFound for an agent not of the
    workspace (an agent without any answers [])."""
    rows = (Agent.in_workspace(workspace_id, _L.knowledge_base)
            .join(_L, on=same_workspace((_L.agent == Agent.id), _L, Agent), join_type=JOIN.LEFT_OUTER)
            .where(Agent.id == agent_id).tuples())
    found = list(rows)
    if not found:
        raise NotFound(f"agentId: no agent {agent_id} in this workspace.")
    return sorted(kb for (kb,) in found if kb is not None)
