"""Ranked full-text search of knowledge articles, one interface over both databases.

SQLite (the embedded default): an FTS5 table, knowledge_article_fts, which the article services
keep in step with knowledge_article in the same transaction (``index_article``, ``unindex``),
ranked by bm25 (a title's words weigh twice a body's). PostgreSQL: a stored generated tsvector
column, search_vector (title weighted A, body D), with its GIN index, ranked by ts_rank; nothing
to keep in step.

A query is the user's words: it is cut to ``QUERY_MAX_CHARS``, split into at most ``MAX_TERMS``
words of letters and digits, and each is quoted (FTS5) or given as a lexeme (to_tsquery), so
no query can be a syntax error. An article matches when it holds any of the words; those that
hold more, or rarer ones, rank first. A query without a word matches nothing.

Bounded work, whatever the words: a search ranks at most ``CANDIDATES`` matching articles (the
first the index yields), and only the best ``limit`` get a snippet. So that a very common word
(one in more than ``COMMON_ARTICLES`` articles) does not fill those candidates and crowd out the
articles that hold the query's rarer words, a query with several words first counts, up to that
bound, the articles each word is in (one statement) and leaves the common words out when it has
others: they would add little to a rare word's score (bm25 weighs a word by its rarity) and
nothing to which articles are worth reading. A query of common words only is ranked among its
first ``CANDIDATES`` matches."""
from __future__ import annotations

import re
from typing import NamedTuple

from models.kernel.db import database, is_postgres

QUERY_MAX_CHARS = 1000
MAX_TERMS = 32
# A word in more articles than this is common; at most this many matching articles are ranked.
COMMON_ARTICLES = 500
CANDIDATES = 500
# The tables and indexes of the search index, which no model declares (tests/models/test_migrations.py).
INDEX_TABLES = ("knowledge_article_fts",)
INDEX_NAMES = ("knowledge_article_search", "knowledge_article_search_vector")
# Columns of the search index on the articles' table, which the model does not declare (PostgreSQL).
INDEX_COLUMNS = ("search_vector",)
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
    """The ``limit`` best articles of the knowledge bases for ``query``, best first; one statement,
    two for a query of several words (their counts first)."""
    words = terms(query)
    if not words or not knowledge_base_ids:
        return []
    postgres = is_postgres()
    if len(words) > 1:
        counts = (_counts_postgres if postgres else _counts_sqlite)(workspace_id, knowledge_base_ids, words)
        present = [w for w, n in zip(words, counts) if n]
        words = [w for w, n in zip(words, counts) if 0 < n <= COMMON_ARTICLES] or present
        if not words:
            return []
    if postgres:
        return _search_postgres(workspace_id, knowledge_base_ids, words, limit)
    return _search_sqlite(workspace_id, knowledge_base_ids, words, limit)


def _phrase(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def _counts_sqlite(workspace_id, knowledge_base_ids, words) -> list[int]:
    # Counted over the whole index, which holds every workspace's articles (each count stops at the
    # bound): bm25 weighs a word by its rarity there too.
    sql = " UNION ALL ".join(
        f"SELECT {i}, (SELECT count(*) FROM (SELECT 1 FROM knowledge_article_fts WHERE knowledge_article_fts "
        "MATCH ? LIMIT ?))"
        for i in range(len(words)))
    params = [p for w in words for p in (_phrase(w), COMMON_ARTICLES + 1)]
    return [n for _, n in sorted(database.execute_sql(sql, params).fetchall())]


def _counts_postgres(workspace_id, knowledge_base_ids, words) -> list[int]:
    rows = database.execute_sql(
        "SELECT t.i, (SELECT count(*) FROM (SELECT 1 FROM knowledge_article a "
        "WHERE a.search_vector @@ to_tsquery('english', t.word) AND a.workspace_id = %s "
        "AND a.knowledge_base_id = ANY(%s) LIMIT %s) s) "
        "FROM unnest(%s::text[]) WITH ORDINALITY AS t(word, i) ORDER BY t.i",
        (workspace_id, list(knowledge_base_ids), COMMON_ARTICLES + 1, list(words))).fetchall()
    return [n for _, n in rows]


def _search_sqlite(workspace_id, knowledge_base_ids, words, limit) -> list[Hit]:
    match = " OR ".join(_phrase(w) for w in words)
    marks = ", ".join("?" * len(knowledge_base_ids))
    # The candidates' scores in a subquery bounded by its LIMIT; the snippet only for the best, each
    # found again by its rowid (bm25's statistics are not needed there).
    rows = database.execute_sql(
        "WITH candidates AS (SELECT f.rowid AS fts_id, a.id AS id, -bm25(f.knowledge_article_fts, 0.0, 2.0, 1.0) "
        "AS score FROM knowledge_article_fts f JOIN knowledge_article a ON a.id = f.article_id "
        f"WHERE f.knowledge_article_fts MATCH ? AND a.workspace_id = ? AND a.knowledge_base_id IN ({marks}) "
        "LIMIT ?), best AS (SELECT * FROM candidates ORDER BY score DESC, id LIMIT ?) "
        "SELECT a.id, a.knowledge_base_id, a.title, best.score, "
        "snippet(f.knowledge_article_fts, 2, '[', ']', '…', 16) "
        "FROM best JOIN knowledge_article_fts f ON f.rowid = best.fts_id JOIN knowledge_article a ON a.id = best.id "
        "WHERE f.knowledge_article_fts MATCH ? ORDER BY best.score DESC, best.id",
        (match, workspace_id, *knowledge_base_ids, CANDIDATES, limit, match)).fetchall()
    return [Hit(r[0], r[1], r[2], float(r[3]), r[4]) for r in rows]


def _search_postgres(workspace_id, knowledge_base_ids, words, limit) -> list[Hit]:
    # The words are letters and digits only: joined by | they are a tsquery that always parses.
    tsquery = " | ".join(words)
    rows = database.execute_sql(
        "WITH q AS (SELECT to_tsquery('english', %s) AS query), "
        "candidates AS (SELECT a.id, ts_rank(a.search_vector, q.query) AS score FROM knowledge_article a, q "
        "WHERE a.search_vector @@ q.query AND a.workspace_id = %s AND a.knowledge_base_id = ANY(%s) LIMIT %s), "
        "best AS (SELECT id, score FROM candidates ORDER BY score DESC, id LIMIT %s) "
        "SELECT a.id, a.knowledge_base_id, a.title, best.score, "
        "ts_headline('english', a.body, q.query, 'StartSel=[, StopSel=], MaxWords=24, MinWords=8') "
        "FROM best JOIN knowledge_article a ON a.id = best.id, q ORDER BY best.score DESC, best.id",
        (tsquery, workspace_id, list(knowledge_base_ids), CANDIDATES, limit)).fetchall()
    return [Hit(r[0], r[1], r[2], float(r[3]), r[4]) for r in rows]
