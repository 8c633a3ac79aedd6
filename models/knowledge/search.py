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
articles that hold the query's rarer words, a query first counts, up to that bound, the articles
each word is in (one statement, each count stopping at the bound) and leaves the common words out
when it has others: they would add little to a rare word's score and nothing to which articles
are worth reading. A query of common words only is ranked among its first ``CANDIDATES`` matches,
and never by reading every article that holds them: on PostgreSQL each statement carries the
tsquery as a constant, so that the planner, seeing from the column's statistics that a word is
common, reads the workspace's articles until it has the candidates rather than the word's whole
GIN posting list; on SQLite bm25 is left out there (it counts the articles holding each word, the
whole of the word's list in the index) and the candidates rank by which words their title and
their body's beginning hold."""
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
    snippet: str | None


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
    """The ``limit`` best articles of the knowledge bases for ``query``, best first, each with a
    snippet; two statements: the words' counts, then the hits."""
    return [Hit(*row[:5]) for row in _ranked(workspace_id, knowledge_base_ids, query, limit, True, 0)]


def search_bodies(*, workspace_id: str, knowledge_base_ids: list[str], query: str, limit: int,
                  body_chars: int) -> list[tuple[Hit, str]]:
    """As ``search``, each hit (without a snippet) with its body's first ``body_chars`` characters,
    read in the same statement by the primary key."""
    return [(Hit(*row[:5]), row[5]) for row in _ranked(workspace_id, knowledge_base_ids, query, limit, False,
                                                       body_chars)]


def _ranked(workspace_id, knowledge_base_ids, query, limit, snippets, body_chars) -> list[tuple]:
    words = terms(query)
    if not words or not knowledge_base_ids:
        return []
    postgres = is_postgres()
    # Every word counted (up to the bound), one statement: a query of one common word is bounded too.
    counts = (_counts_postgres if postgres else _counts_sqlite)(workspace_id, knowledge_base_ids, words)
    rare = [w for w, n in zip(words, counts) if 0 < n <= COMMON_ARTICLES]
    common = [w for w, n in zip(words, counts) if n > COMMON_ARTICLES]
    if not rare and not common:
        return []
    if postgres:
        return _search_postgres(workspace_id, knowledge_base_ids, rare or common, limit, snippets, body_chars)
    return _search_sqlite(workspace_id, knowledge_base_ids, rare, common, limit, snippets, body_chars)


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
    # Each word's tsquery a constant of the statement (not a column of unnest), so that the planner
    # estimates it from the column's statistics: a common word's count reads the workspace's
    # articles until the bound (a few hundred rows) instead of its GIN posting list (every article).
    sql = " UNION ALL ".join(
        f"SELECT {i}, (SELECT count(*) FROM (SELECT 1 FROM knowledge_article a WHERE a.search_vector @@ "
        "to_tsquery('english', %s) AND a.workspace_id = %s AND a.knowledge_base_id = ANY(%s) LIMIT %s) s)"
        for i in range(len(words)))
    params = [p for w in words for p in (w, workspace_id, list(knowledge_base_ids), COMMON_ARTICLES + 1)]
    return [n for _, n in sorted(database.execute_sql(sql, params).fetchall())]


def _search_sqlite(workspace_id, knowledge_base_ids, rare, common, limit, snippets, body_chars) -> list[tuple]:
    words = rare or common
    match = " OR ".join(_phrase(w) for w in words)
    marks = ", ".join("?" * len(knowledge_base_ids))
    if rare:
        # bm25 counts the articles that hold each word, reading its whole list in the index: cheap
        # for rare words only.
        score, score_params = "-bm25(f.knowledge_article_fts, 0.0, 2.0, 1.0)", ()
    else:
        # Common words only: bm25 would read the list of every article holding each of them (most
        # of the index) to weigh words that all weigh next to nothing. The candidates are ranked by
        # which of the words their title (twice) and their body's beginning hold instead.
        score = " + ".join("2 * (instr(lower(a.title), ?) > 0) + (instr(lower(substr(a.body, 1, 2000)), ?) > 0)"
                           for _ in words)
        score_params = tuple(p for w in words for p in (w, w))
    body = "substr(a.body, 1, ?)" if body_chars else "NULL"
    # The candidates' scores in a subquery bounded by its LIMIT; the snippet only for the best, each
    # found again by its rowid (bm25's statistics are not needed there).
    if snippets:
        snippet = "snippet(f.knowledge_article_fts, 2, '[', ']', '…', 16)"
        best = ("JOIN knowledge_article_fts f ON f.rowid = best.fts_id JOIN knowledge_article a ON a.id = best.id "
                "WHERE f.knowledge_article_fts MATCH ?")
    else:
        snippet, best = "NULL", "JOIN knowledge_article a ON a.id = best.id"
    rows = database.execute_sql(
        f"WITH candidates AS (SELECT f.rowid AS fts_id, a.id AS id, {score} "
        "AS score FROM knowledge_article_fts f JOIN knowledge_article a ON a.id = f.article_id "
        f"WHERE f.knowledge_article_fts MATCH ? AND a.workspace_id = ? AND a.knowledge_base_id IN ({marks}) "
        "LIMIT ?), best AS (SELECT * FROM candidates ORDER BY score DESC, id LIMIT ?) "
        f"SELECT a.id, a.knowledge_base_id, a.title, best.score, {snippet}, {body} FROM best {best} "
        "ORDER BY best.score DESC, best.id",
        (*score_params, match, workspace_id, *knowledge_base_ids, CANDIDATES, limit,
         *((body_chars,) if body_chars else ()), *((match,) if snippets else ()))).fetchall()
    return [(r[0], r[1], r[2], float(r[3]), r[4], r[5]) for r in rows]


def _search_postgres(workspace_id, knowledge_base_ids, words, limit, snippets, body_chars) -> list[tuple]:
    # The words are letters and digits only: joined by | they are a tsquery that always parses. It
    # is a constant of the statement (to_tsquery with its configuration is immutable), so that the
    # planner estimates how many articles match from the column's statistics: the GIN index for
    # rare words; for common ones, the workspace's articles read until the candidates' bound rather
    # than a bitmap of every article that holds them.
    tsquery = " | ".join(words)
    body = "SUBSTR(a.body, 1, %s)" if body_chars else "NULL"
    snippet = ("ts_headline('english', a.body, to_tsquery('english', %s), "
               "'StartSel=[, StopSel=], MaxWords=24, MinWords=8')") if snippets else "NULL"
    rows = database.execute_sql(
        "WITH candidates AS (SELECT a.id, ts_rank(a.search_vector, to_tsquery('english', %s)) AS score "
        "FROM knowledge_article a WHERE a.search_vector @@ to_tsquery('english', %s) AND a.workspace_id = %s "
        "AND a.knowledge_base_id = ANY(%s) LIMIT %s), "
        "best AS (SELECT id, score FROM candidates ORDER BY score DESC, id LIMIT %s) "
        f"SELECT a.id, a.knowledge_base_id, a.title, best.score, {snippet}, {body} "
        "FROM best JOIN knowledge_article a ON a.id = best.id ORDER BY best.score DESC, best.id",
        (tsquery, tsquery, workspace_id, list(knowledge_base_ids), CANDIDATES, limit,
         *((tsquery,) if snippets else ()), *((body_chars,) if body_chars else ()))).fetchall()
    return [(r[0], r[1], r[2], float(r[3]), r[4], r[5]) for r in rows]
