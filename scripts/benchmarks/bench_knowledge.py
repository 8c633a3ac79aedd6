"""Knowledge search (models.knowledge.search.search, the domain call the search operation makes)
and retrieval (models.knowledge.retrieval.retrieve, the retrieve operation's) over --articles
(default 100,000) articles on both databases: p50 and p99 of a ranked top-5 search and of a top-5
retrieval for an agent, beside a baseline of one article read by its primary key in the same run.

  seed      a scratch SQLite file, then a scratch database on the server of --postgres-url (dropped
            afterwards), each migrated; one workspace and one knowledge base; the articles inserted
            in batches with titles and bodies of words drawn from a 5,000-word vocabulary (Zipf-like),
            and indexed as the domain indexes them (the FTS5 table on SQLite); an agent with that
            knowledge base and a second one of 1,000 articles attached
  search    --requests (default 300) queries of two to four vocabulary words, after --warmup
            unrecorded ones; each followed by the same words retrieved for the agent (its two
            knowledge bases, the bodies read with the hits), then the baseline's run (so that the machine's load
            weighs on all alike). The vocabulary's first words are in nearly every article, so most
            queries hold a very common word: the case a search must bound
  baseline  SELECT of one article by its id (the primary key's index)

A Markdown table on stdout, progress on stderr.

    scripts/bench_knowledge [--articles 100000] [--requests 300] [--warmup 30] [--postgres-url URL]
"""
from __future__ import annotations

import os
import random
import sys
import time
import uuid
from datetime import datetime
from pathlib import Path

from . import options
from .harness import CLEANUP, ROOT, log, median, percentile, scratch_dir, scratch_postgres

VOCABULARY = 5000
GOAL_P99_MS = 25.0


def _parser():
    parser = options.parser("bench_knowledge", __doc__, options.postgres(), options.rounds(300, warmup=30))
    parser.add_argument("--articles", type=int, default=100_000, help="articles in the knowledge base (default 100000)")
    return parser


def _words(rng: random.Random, count: int) -> str:
    """``count`` words of the vocabulary, the first ones far more frequent than the last (Pareto)."""
    return " ".join(f"word{min(int(rng.paretovariate(0.8)), VOCABULARY)}" for _ in range(count))


def _seed(articles: int) -> tuple[str, str, str, list[str]]:
    from models.configs.tables import Agent
    from models.kernel.db import database, is_postgres
    from models.knowledge.tables import KnowledgeArticle, KnowledgeBase, KnowledgeBaseAgent
    from models.kernel.scoping import Workspace
    rng = random.Random(7)
    now = datetime(2026, 11, 1)
    workspace = Workspace.create(name="Bench", created_at=now)
    kb = KnowledgeBase.create(workspace=workspace.id, name="Bench", created_by="bench", created_at=now, updated_at=now)
    second = KnowledgeBase.create(workspace=workspace.id, name="Second", created_by="bench", created_at=now,
                                  updated_at=now)
    agent = Agent.create(workspace=workspace.id, name="Bench", created_by="bench", created_at=now, updated_at=now)
    for base in (kb, second):
        KnowledgeBaseAgent.create(workspace=workspace.id, agent=agent.id, knowledge_base=base.id, attached_by="bench",
                                  attached_at=now)
    ids = []
    for start in range(0, articles + 1000, 2000):
        rows = [{"id": str(uuid.uuid4()), "workspace": workspace.id,
                 "knowledge_base": kb.id if start + n < articles else second.id,
                 "title": _words(rng, 4), "body": _words(rng, 60), "created_by": "bench", "created_at": now,
                 "updated_at": now} for n in range(min(2000, articles + 1000 - start))]
        with database.atomic():
            KnowledgeArticle.insert_many(rows).execute()
            if not is_postgres():
                database.execute_sql("INSERT INTO knowledge_article_fts (article_id, title, body) SELECT id, title, "
                                     "body FROM knowledge_article WHERE id IN (%s)" % ", ".join("?" * len(rows)),
                                     tuple(r["id"] for r in rows))
        ids.extend(r["id"] for r in rows)
    if is_postgres():
        database.execute_sql("ANALYZE knowledge_article")
    return workspace.id, kb.id, agent.id, ids


def _measure(name: str, url: str, data_dir: Path, args) -> dict:
    from models.kernel.db import database, open_database
    from models.knowledge import retrieval, search
    from models.knowledge.tables import KnowledgeArticle
    from models.migrations import migrate
    open_database(url, data_dir)
    database.connect()
    try:
        migrate()
        started = time.perf_counter()
        workspace_id, kb_id, agent_id, ids = _seed(args.articles)
        log(f"{name}: {args.articles} articles seeded in {time.perf_counter() - started:.1f} s")
        rng = random.Random(11)
        found, searches, retrievals, lookups = 0, [], [], []
        for i in range(args.warmup + args.requests):
            query = _words(rng, rng.randint(2, 4))
            t0 = time.perf_counter()
            hits = search.search(workspace_id=workspace_id, knowledge_base_ids=[kb_id], query=query, limit=5)
            t1 = time.perf_counter()
            retrieval.retrieve(workspace_id=workspace_id, agent_id=agent_id, query=query, top_k=5)
            t2 = time.perf_counter()
            KnowledgeArticle.in_workspace(workspace_id, KnowledgeArticle.id, KnowledgeArticle.title).where(
                KnowledgeArticle.id == rng.choice(ids)).tuples().first()
            t3 = time.perf_counter()
            if i >= args.warmup:
                searches.append((t1 - t0) * 1000)
                retrievals.append((t2 - t1) * 1000)
                lookups.append((t3 - t2) * 1000)
                found += bool(hits)
        return {"database": name, "articles": args.articles, "search p50": median(searches),
                "search p99": percentile(searches, 99), "retrieve p50": median(retrievals),
                "retrieve p99": percentile(retrievals, 99), "lookup p50": median(lookups),
                "lookup p99": percentile(lookups, 99), "with hits": found / args.requests}
    finally:
        database.close()
        if hasattr(database.obj, "close_all"):
            database.close_all()


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    sys.path.insert(0, str(ROOT))
    rows = []
    with CLEANUP.scope():
        data_dir = scratch_dir("bench_knowledge_")
        rows.append(_measure("SQLite", None, data_dir, args))
        url = scratch_postgres(args.postgres_url, f"bench_knowledge_{os.getpid()}")
        rows.append(_measure("PostgreSQL", url, data_dir, args))
    print("| database | articles | search p50 ms | search p99 ms | retrieve p50 ms | retrieve p99 ms | "
          "pk lookup p50 ms | pk lookup p99 ms | p50 ratio | queries with hits | p99 goal |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        met = max(r["search p99"], r["retrieve p99"]) <= GOAL_P99_MS
        print(f"| {r['database']} | {r['articles']:,} | {r['search p50']:.2f} | {r['search p99']:.2f} | "
              f"{r['retrieve p50']:.2f} | {r['retrieve p99']:.2f} | "
              f"{r['lookup p50']:.3f} | {r['lookup p99']:.3f} | {r['search p50'] / r['lookup p50']:.0f}x | "
              f"{r['with hits']:.0%} | {'met' if met else 'missed'} (<= 25 ms, both) |")
    return 0
