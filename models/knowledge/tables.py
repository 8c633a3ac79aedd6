"""The tables of knowledge bases, their documents and articles, and the agents they are attached to
(models.knowledge)."""
from __future__ import annotations

from peewee import BigIntegerField, CharField, DateTimeField, ForeignKeyField, TextField

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


class KnowledgeDocument(WorkspaceScoped):
    """A file uploaded to a knowledge base or fetched from a URL, read into articles
    (models.knowledge.documents); the file itself is not kept, its text is, in its articles."""
    id = CharField(primary_key=True, default=new_id)
    knowledge_base = ForeignKeyField(KnowledgeBase, on_delete="CASCADE", backref="+", index=False)
    name = TextField()
    content_type = CharField()
    bytes = BigIntegerField()
    source_url = TextField(null=True)
    content_hash = CharField()  # SHA-256 of the bytes, hex: a sync replaces the articles only when it changes
    created_by = CharField()
    created_at = DateTimeField(default=utcnow)
    synced_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = (
            (("workspace", "knowledge_base", "created_at", "id"), False),  # a knowledge base's list
        )


class KnowledgeArticle(WorkspaceScoped):
    """A titled passage of a knowledge base; its words are indexed for search (models.knowledge.search)."""
    id = CharField(primary_key=True, default=new_id)
    knowledge_base = ForeignKeyField(KnowledgeBase, on_delete="CASCADE", backref="+", index=False)
    # The document it was read from; None for an article written by hand.
    document = ForeignKeyField(KnowledgeDocument, null=True, on_delete="CASCADE", backref="+")
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
