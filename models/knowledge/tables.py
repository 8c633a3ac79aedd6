"""The tables of knowledge bases, their articles and the agents they are attached to (models.knowledge)."""
from __future__ import annotations

from peewee import CharField, DateTimeField, ForeignKeyField, TextField

from models.configs.tables import Agent
from models.kernel.db import new_id, utcnow
from models.kernel.scoping import WorkspaceScoped


class KnowledgeBase(WorkspaceScoped):
    """A named set of articles of a workspace."""
    id = CharField(primary_key=True, default=new_id)
    name = TextField()
    description = TextField(null=True)
    created_by = CharField()
    created_at = DateTimeField(default=utcnow)
    updated_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = (
            (("workspace", "created_at", "id"), False),  # the list's order
        )


class KnowledgeArticle(WorkspaceScoped):
    """A titled passage of a knowledge base; its words are indexed for search (models.knowledge.search)."""
    id = CharField(primary_key=True, default=new_id)
    knowledge_base = ForeignKeyField(KnowledgeBase, on_delete="CASCADE", backref="+", index=False)
    title = TextField()
    body = TextField()
    created_by = CharField()
    created_at = DateTimeField(default=utcnow)
    updated_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = (
            (("workspace", "knowledge_base", "created_at", "id"), False),  # a knowledge base's list
        )


class KnowledgeBaseAgent(WorkspaceScoped):
    """A knowledge base attached to an agent: what retrieval searches for it (models.knowledge.agents).
    Deleting either deletes the link (the foreign keys' cascade)."""
    id = CharField(primary_key=True, default=new_id)
    agent = ForeignKeyField(Agent, on_delete="CASCADE", backref="+", index=False)
    knowledge_base = ForeignKeyField(KnowledgeBase, on_delete="CASCADE", backref="+")  # indexed for the cascade
    attached_by = CharField()
    attached_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = (
            (("agent", "knowledge_base"), True),  # attached once
            (("workspace", "agent", "attached_at", "id"), False),  # an agent's list
        )
