"""The tables of knowledge bases and their articles (models.knowledge)."""
from __future__ import annotations

from peewee import CharField, DateTimeField, ForeignKeyField, TextField

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
