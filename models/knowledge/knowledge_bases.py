"""Knowledge bases and their articles.

A knowledge base is a named set of articles in a workspace; an article is a title (one line, 1 to
200 characters once trimmed) and a body (free text, 1 to 20,000 characters once trimmed), written
by hand. Each write of an article updates the search index in the same transaction
(models.knowledge.search), so a search sees exactly the articles there are. Deleting a knowledge
base deletes its articles (the foreign key's cascade) and their index entries.

Lists are by creation time (the indexes' order), one statement per page.
"""
from __future__ import annotations

import functools
from datetime import datetime
from typing import NamedTuple

from models.identity.principal import Principal
from models.kernel.db import database, utcnow
from models.kernel.errors import InvalidInput, NotFound
from models.kernel.pagination import Page, workspace_list
from models.kernel.sql import Prepared
from models.kernel.text import trimmed_text
from models.knowledge import search
from models.knowledge.tables import KnowledgeArticle, KnowledgeBase

NAME_MAX_CHARS = 100
DESCRIPTION_MAX_CHARS = 2000
TITLE_MAX_CHARS = 200
BODY_MAX_CHARS = 20_000
SEARCH_MAX_LIMIT = 50


class KnowledgeBaseRecord(NamedTuple):
    id: str
    workspace_id: str
    name: str
    description: str | None
    created_by: str
    created_at: datetime
    updated_at: datetime


class ArticleRecord(NamedTuple):
    id: str
    workspace_id: str
    knowledge_base_id: str
    title: str
    body: str
    created_by: str
    created_at: datetime
    updated_at: datetime


class SearchResult(NamedTuple):
    article_id: str
    knowledge_base_id: str
    title: str
    score: float
    snippet: str


_K, _A = KnowledgeBase, KnowledgeArticle
_KB_COLUMNS = (_K.id, _K.workspace, _K.name, _K.description, _K.created_by, _K.created_at, _K.updated_at)
_A_COLUMNS = (_A.id, _A.workspace, _A.knowledge_base, _A.title, _A.body, _A.created_by, _A.created_at, _A.updated_at)
_ONE_KB = Prepared(lambda workspace_id, knowledge_base_id: _K.in_workspace(workspace_id, *_KB_COLUMNS)
                   .where(_K.id == knowledge_base_id))
_ONE_ARTICLE = Prepared(lambda workspace_id, knowledge_base_id, article_id: _A.in_workspace(workspace_id, *_A_COLUMNS)
                        .where((_A.knowledge_base == knowledge_base_id) & (_A.id == article_id)))


@functools.cache
def _kb_page():
    return workspace_list(_K, _KB_COLUMNS, order_by=(_K.created_at, _K.id))


@functools.cache
def _article_page():
    return workspace_list(_A, _A_COLUMNS, order_by=(_A.created_at, _A.id), names=("knowledge_base_id",),
                          where=lambda params: [_A.knowledge_base == params["knowledge_base_id"]])


_text = trimmed_text


def _required(value, field: str, max_chars: int, *, multiline: bool = False) -> str:
    if value is None:
        raise InvalidInput(f"{field} is required; it cannot be cleared.")
    return _text(value, field, max_chars, multiline=multiline)


# --- knowledge bases ----------------------------------------------------------------------------

def create_knowledge_base(principal: Principal, *, workspace_id: str, name: str,
                          description: str | None = None) -> KnowledgeBaseRecord:
    now = utcnow()
    row = _K.create(workspace=workspace_id, name=_required(name, "name", NAME_MAX_CHARS),
                    description=_text(description, "description", DESCRIPTION_MAX_CHARS, multiline=True,
                                      optional=True),
                    created_by=principal.user_id, created_at=now, updated_at=now)
    return get_knowledge_base(workspace_id=workspace_id, knowledge_base_id=row.id)


def list_knowledge_bases(*, workspace_id: str, limit: int, offset: int) -> Page[KnowledgeBaseRecord]:
    return _kb_page().page(KnowledgeBaseRecord, workspace_id=workspace_id, limit=limit, offset=offset)


def get_knowledge_base(*, workspace_id: str, knowledge_base_id: str) -> KnowledgeBaseRecord:
    record = _ONE_KB.first(KnowledgeBaseRecord, workspace_id=workspace_id, knowledge_base_id=knowledge_base_id)
    if record is None:
        raise NotFound(f"No knowledge base {knowledge_base_id} in this workspace.")
    return record


def update_knowledge_base(*, workspace_id: str, knowledge_base_id: str, **changes) -> KnowledgeBaseRecord:
    """``name`` and/or ``description`` (None clears the description)."""
    if not changes:
        raise InvalidInput("Give at least one field to change.")
    columns = {"updated_at": utcnow()}
    if "name" in changes:
        columns["name"] = _required(changes["name"], "name", NAME_MAX_CHARS)
    if "description" in changes:
        columns["description"] = _text(changes["description"], "description", DESCRIPTION_MAX_CHARS,
                                       multiline=True, optional=True)
    if not _K.update(**columns).where((_K.workspace == workspace_id) & (_K.id == knowledge_base_id)).execute():
        raise NotFound(f"No knowledge base {knowledge_base_id} in this workspace.")
    return get_knowledge_base(workspace_id=workspace_id, knowledge_base_id=knowledge_base_id)


def delete_knowledge_base(*, workspace_id: str, knowledge_base_id: str) -> None:
    """The knowledge base, its articles and their entries in the search index."""
    with database.atomic():
        search.unindex_knowledge_base(workspace_id, knowledge_base_id)
        _A.delete().where((_A.workspace == workspace_id) & (_A.knowledge_base == knowledge_base_id)).execute()
        if not _K.delete().where((_K.workspace == workspace_id) & (_K.id == knowledge_base_id)).execute():
            raise NotFound(f"No knowledge base {knowledge_base_id} in this workspace.")


# --- articles -----------------------------------------------------------------------------------

def create_article(principal: Principal, *, workspace_id: str, knowledge_base_id: str, title: str,
                   body: str) -> ArticleRecord:
    title = _required(title, "title", TITLE_MAX_CHARS)
    body = _required(body, "body", BODY_MAX_CHARS, multiline=True)
    get_knowledge_base(workspace_id=workspace_id, knowledge_base_id=knowledge_base_id)
    now = utcnow()
    with database.atomic():
        row = _A.create(workspace=workspace_id, knowledge_base=knowledge_base_id, title=title, body=body,
                        created_by=principal.user_id, created_at=now, updated_at=now)
        search.index_article(row.id, title, body)
    return get_article(workspace_id=workspace_id, knowledge_base_id=knowledge_base_id, article_id=row.id)


def list_articles(*, workspace_id: str, knowledge_base_id: str, limit: int, offset: int) -> Page[ArticleRecord]:
    get_knowledge_base(workspace_id=workspace_id, knowledge_base_id=knowledge_base_id)
    return _article_page().page(ArticleRecord, workspace_id=workspace_id, knowledge_base_id=knowledge_base_id,
                                limit=limit, offset=offset)


def get_article(*, workspace_id: str, knowledge_base_id: str, article_id: str) -> ArticleRecord:
    record = _ONE_ARTICLE.first(ArticleRecord, workspace_id=workspace_id, knowledge_base_id=knowledge_base_id,
                                article_id=article_id)
    if record is None:
        raise NotFound(f"No article {article_id} in knowledge base {knowledge_base_id} of this workspace.")
    return record


def update_article(*, workspace_id: str, knowledge_base_id: str, article_id: str, **changes) -> ArticleRecord:
    """``title`` and/or ``body``, re-indexed in the same transaction."""
    if not changes:
        raise InvalidInput("Give at least one field to change.")
    columns = {}
    if "title" in changes:
        columns["title"] = _required(changes["title"], "title", TITLE_MAX_CHARS)
    if "body" in changes:
        columns["body"] = _required(changes["body"], "body", BODY_MAX_CHARS, multiline=True)
    with database.atomic():
        where = (_A.workspace == workspace_id) & (_A.knowledge_base == knowledge_base_id) & (_A.id == article_id)
        if not _A.update(updated_at=utcnow(), **columns).where(where).execute():
            raise NotFound(f"No article {article_id} in knowledge base {knowledge_base_id} of this workspace.")
        record = get_article(workspace_id=workspace_id, knowledge_base_id=knowledge_base_id, article_id=article_id)
        search.index_article(record.id, record.title, record.body)
    return record


def delete_article(*, workspace_id: str, knowledge_base_id: str, article_id: str) -> None:
    with database.atomic():
        where = (_A.workspace == workspace_id) & (_A.knowledge_base == knowledge_base_id) & (_A.id == article_id)
        if not _A.delete().where(where).execute():
            raise NotFound(f"No article {article_id} in knowledge base {knowledge_base_id} of this workspace.")
        search.unindex([article_id])


def search_knowledge_base(*, workspace_id: str, knowledge_base_id: str, q: str, limit: int) -> list[SearchResult]:
    """The knowledge base's ``limit`` articles best matching ``q``'s words, best first."""
    if not 1 <= limit <= SEARCH_MAX_LIMIT:
        raise InvalidInput(f"topK must be 1 to {SEARCH_MAX_LIMIT}; {limit} given.")
    if not search.terms(q):
        raise InvalidInput("q must hold at least one word of letters or digits.")
    get_knowledge_base(workspace_id=workspace_id, knowledge_base_id=knowledge_base_id)
    return [SearchResult(*hit) for hit in search.search(workspace_id=workspace_id,
                                                        knowledge_base_ids=[knowledge_base_id], query=q,
                                                        limit=limit)]
