"""Ranked full-text search of knowledge articles, one interface over both databases.

SQLite (the embedded default): an FTS5 table, knowledge_article_fts, which the article services
keep in step with knowledge_article in the same transaction (``index_article``, ``unindex``),
ranked by bm25 (a title's words weigh twice a body's). PostgreSQL: an expression GIN index over
the English tsvector of title and body, ranked by ts_rank; nothing to keep in step.

A query is the user's words: it is cut to ``QUERY_MAX_CHARS``, split into at most ``MAX_TERMS``
words of letters and digits, and each is quoted (FTS5) or given as a lexeme (to_tsquery), so
no query can be a syntax error. An article matches when it holds any of the words; those that
hold more, or rarer ones, rank first. A query without a word matches nothing.
"""
from __future__ import annotations

import re
from typing import NamedTuple

from models.kernel.db import database, is_postgres

QUERY_MAX_CHARS = 500
MAX_TERMS = 32
# The tables and indexes of the search index, which no model declares (tests/models/test_migrations.py).
INDEX_TABLES = ("knowledge_article_fts",)
INDEX_NAMES = ("knowledge_article_search",)
_WORD = re.compile(r"[^\W_]+")


class Hit(NamedTuple):
    article_id: str
    knowledge_base_id: str
    title: str
    score: float
    snippet: str


def terms(query: str) -> list[str]:
    """The query's words, lower case, each once, at most ``MAX_TERMS``."""
    return list(dict.fromkeys(w.lower() for w in _WORD.findall(query[:QUERY_MAX_CHARS])))[:MAX_TERMS]


def index_article(article_id: str, title: str, body: str) -> None:
    """The article's words in the index (replacing what it held of them)."""
    if is_postgres():
        return
    unindex([article_id])
    database.execute_sql("INSERT INTO knowledge_article_fts (article_id, title, body) VALUES (?, ?, ?)",
                         (article_id, title, body))


def unindex(article_ids: list[str]) -> None:
    if is_postgres() or not article_ids:
        return
    marks = ", ".join("?" * len(article_ids))
    database.execute_sql(f"DELETE FROM knowledge_article_fts WHERE article_id IN ({marks})", tuple(article_ids))


def unindex_knowledge_base(workspace_id: str, knowledge_base_id: str) -> None:
    if is_postgres():
        return
    database.execute_sql(
        "DELETE FROM knowledge_article_fts WHERE article_id IN (SELECT id FROM knowledge_article "
        "WHERE workspace_id = ? AND knowledge_base_id = ?)", (workspace_id, knowledge_base_id))


def search(*, workspace_id: str, knowledge_base_ids: list[str], query: str, limit: int) -> list[Hit]:
    """The ``limit`` best articles of the knowledge bases for ``query``, best first; one statement."""
    words = terms(query)
    if not words or not knowledge_base_ids:
        return []
    if is_postgres():
        return _search_postgres(workspace_id, knowledge_base_ids, words, limit)
    return _search_sqlite(workspace_id, knowledge_base_ids, words, limit)


def _search_sqlite(workspace_id, knowledge_base_ids, words, limit) -> list[Hit]:
    match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
    marks = ", ".join("?" * len(knowledge_base_ids))
    rows = database.execute_sql(
        "SELECT a.id, a.knowledge_base_id, a.title, -bm25(knowledge_article_fts, 0.0, 2.0, 1.0) AS score, "
        "snippet(knowledge_article_fts, 2, '[', ']', '…', 16) "
        "FROM knowledge_article_fts JOIN knowledge_article a ON a.id = knowledge_article_fts.article_id "
        f"WHERE knowledge_article_fts MATCH ? AND a.workspace_id = ? AND a.knowledge_base_id IN ({marks}) "
        "ORDER BY score DESC, a.id LIMIT ?",
        (match, workspace_id, *knowledge_base_ids, limit)).fetchall()
    return [Hit(r[0], r[1], r[2], float(r[3]), r[4]) for r in rows]


def _search_postgres(workspace_id, knowledge_base_ids, words, limit) -> list[Hit]:
    # The words are letters and digits only: joined by | they are a tsquery that always parses.
    tsquery = " | ".join(words)
    rows = database.execute_sql(
        "WITH q AS (SELECT to_tsquery('english', %s) AS query), "
        "hits AS (SELECT a.id, a.knowledge_base_id, a.title, a.body, "
        "ts_rank(setweight(to_tsvector('english', a.title), 'A') || setweight(to_tsvector('english', a.body), 'D'), "
        "q.query) AS score "
        "FROM knowledge_article a, q "
        "WHERE to_tsvector('english', a.title || ' ' || a.body) @@ q.query "
        "AND a.workspace_id = %s AND a.knowledge_base_id = ANY(%s) "
        "ORDER BY score DESC, a.id LIMIT %s) "
        "SELECT hits.id, hits.knowledge_base_id, hits.title, hits.score, "
        "ts_headline('english', hits.body, q.query, 'StartSel=[, StopSel=], MaxWords=24, MinWords=8') "
        "FROM hits, q ORDER BY hits.score DESC, hits.id",
        (tsquery, workspace_id, list(knowledge_base_ids), limit)).fetchall()
    return [Hit(r[0], r[1], r[2], float(r[3]), r[4]) for r in rows]
