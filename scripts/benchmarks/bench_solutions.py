"""GET /solutions/runs on PostgreSQL: how fast a page of optimization runs lists, with their
solutions and feedback, from 100,000 runs and 500,000 solutions, and what it costs in statements.

  data      a scratch database made on the server of --postgres-url (dropped afterwards): one
            workspace, 10 agents, 1,000 feedback, --runs (default 100,000) runs spread over a year,
            their statuses in turn (generating, pendingReview, completed, failed), and 5 solutions
            each (--runs x 5 solutions), each addressing one feedback; inserted by INSERT ... SELECT
            generate_series, the tally of runs by status counted from them (as migration 17 does),
            then VACUUM ANALYZE. ``--quick`` seeds a tenth
  requests  the management API in this process (Starlette's test client, one request after
            another, LOG_LEVEL=WARNING, rate limits never reached), --requests times per case after
            5 warm-up requests: the first page (limit 20, newest first), the same page with a
            filter state that names every status (the same runs, but counted as every list was
            before the tally: the baseline of the first page, measured in the same run), a page at
            offset 50,000 (or half the runs), sorted by status, feedbackCount and solutionCount, a
            search (an agent's name), a search of solution titles, a filter state (one status and
            one agent); p50 and p99 of each, the statements Peewee sent for one request of each
            case (admission included), and with ``--explain`` the plan of each case's page
            statement (EXPLAIN ANALYZE) on stderr

Goal: the first page at p99 <= 25 ms at concurrency 1. A Markdown table on stdout, progress on stderr.

    scripts/bench_solutions [--runs 100000] [--quick] [--requests 200] [--explain] [--postgres-url URL]
"""
from __future__ import annotations

import base64
import json
import logging
import os
import re
import time

from . import options
from .harness import CLEANUP, log, median, percentile, scratch_dir, scratch_postgres

SOLUTIONS_PER_RUN = 5
AGENTS = 10
FEEDBACK = 1000


def main(argv=None) -> None:
    parser = options.parser("bench_solutions", __doc__, options.rounds(requests=200), options.postgres())
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="a tenth of the runs (and solutions)")
    parser.add_argument("--explain", action="store_true", help="the plan of each case's page statement, on stderr")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs //= 10
    with CLEANUP.guard():
        work = scratch_dir("bench-solutions-")
        url = scratch_postgres(args.postgres_url, f"bench_solutions_{os.getpid()}")
        client, owner, agents = _app(url, work)
        _seed(url, owner, agents, args.runs)
        rows = _cases(client, owner, agents, args, url)
        print("| case | p50 ms | p99 ms | statements | note |\n|---|---:|---:|---:|---|")
        for row in rows:
            print("| " + " | ".join(row) + " |")


def _app(url: str, work):
    os.environ["LOG_LEVEL"] = "WARNING"
    from starlette.testclient import TestClient

    from api.app import create_app
    from core.settings import Settings
    from tests.support import factories
    settings = Settings(database_url=url, data_dir=str(work), transcription_workers=0, webhook_workers=0,
                        optimization_workers=0, retention_interval_s=0, default_requests_per_minute=10**8,
                        default_requests_per_day=10**9, log_level="WARNING")
    client = TestClient(create_app(settings))
    client.__enter__()
    CLEANUP.push(lambda: client.__exit__(None, None, None))
    owner = factories.workspace("Bench")
    agents = [factories.agent(owner, name=f"Agent {name}") for name in
              ("Alpha", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot", "Golf", "Hotel", "India", "Juliett")]
    return client, owner, agents


def _seed(url: str, owner, agents: list[str], runs: int) -> None:
    import psycopg2
    solutions = runs * SOLUTIONS_PER_RUN
    log(f"seeding {FEEDBACK:,} feedback, {runs:,} runs, {solutions:,} solutions")
    started = time.perf_counter()
    conn = psycopg2.connect(url)
    conn.autocommit = True
    ws, user = owner.workspace_id, owner.user_id
    with conn.cursor() as cur:
        cur.execute("""
            INSERT INTO feedback (id, workspace_id, number, title, severity, status, entity_type, agent_id, resolved,
                                  is_archived, comments_count, created_by, author_id, created_at, updated_at)
            SELECT md5('fb' || i)::uuid::text, %(ws)s, i, 'Feedback number ' || i, 1 + i %% 5, 'open', 'agent',
                   (%(agents)s::text[])[1 + i %% 10], false, false, 0, 'user', %(user)s,
                   now() AT TIME ZONE 'UTC' - i * interval '1 hour', now() AT TIME ZONE 'UTC'
            FROM generate_series(1, %(n)s) AS i""", {"ws": ws, "agents": agents, "user": user, "n": FEEDBACK})
        cur.execute("""
            INSERT INTO optimization_run (id, workspace_id, agent_id, status, optimizer, feedback_count, solution_count,
                                          accepted_count, rejected_count, attempts, created_by, created_at, updated_at)
            SELECT md5('run' || i)::uuid::text, %(ws)s, (%(agents)s::text[])[1 + i %% 10],
                   (ARRAY['generating', 'pendingReview', 'completed', 'failed'])[1 + i %% 4], 'builtin',
                   1 + i %% 50, %(per)s, 0, 0, 1, %(user)s,
                   now() AT TIME ZONE 'UTC' - (i * interval '365 days' / %(n)s),
                   now() AT TIME ZONE 'UTC' - (i * interval '365 days' / %(n)s)
            FROM generate_series(1, %(n)s) AS i""", {"ws": ws, "agents": agents, "user": user, "n": runs,
                                                     "per": SOLUTIONS_PER_RUN})
        cur.execute("""
            INSERT INTO solution (id, workspace_id, run_id, title, change, explanation, display_order, created_at)
            SELECT md5('sol' || j)::uuid::text, %(ws)s, md5('run' || (1 + (j - 1) / %(per)s))::uuid::text,
                   'Fix ' || j || ' of the greeting', %(change)s, 'Because callers said so.', 1 + (j - 1) %% %(per)s,
                   now() AT TIME ZONE 'UTC'
            FROM generate_series(1, %(n)s) AS j""",
                    {"ws": ws, "per": SOLUTIONS_PER_RUN, "n": solutions,
                     "change": json.dumps({"path": "/firstMessage", "oldValue": "Hello!", "newValue": "Hi!",
                                           "diff": "--- a/firstMessage\n+++ b/firstMessage\n@@ -1 +1 @@\n-Hello!\n+Hi!\n"})})
        cur.execute("""
            INSERT INTO solution_feedback (workspace_id, solution_id, feedback_id)
            SELECT %(ws)s, md5('sol' || j)::uuid::text, md5('fb' || (1 + j %% %(fb)s))::uuid::text
            FROM generate_series(1, %(n)s) AS j""", {"ws": ws, "fb": FEEDBACK, "n": solutions})
        cur.execute("""
            INSERT INTO optimization_run_tally (workspace_id, status, runs)
            SELECT workspace_id, status, COUNT(*) FROM optimization_run GROUP BY workspace_id, status""")
        for table in ("feedback", "optimization_run", "optimization_run_tally", "solution", "solution_feedback"):
            cur.execute(f"VACUUM ANALYZE {table}")
    conn.close()
    log(f"seeded in {time.perf_counter() - started:.1f} s")


class _Statements(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.sent: list[tuple] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.name == "peewee":
            self.sent.append(record.msg if isinstance(record.msg, tuple) else (str(record.msg), ()))


def _statements(client, owner, params: dict) -> list[tuple]:
    """The statements one request sent, each (sql, params)."""
    logger = logging.getLogger("peewee")
    handler, level, propagate = _Statements(), logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False  # counted here, not printed by the root's handler
    try:
        _timed(client, owner, params)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate
    return handler.sent


def _explain(url: str, sent: list[tuple], warm: list[tuple]) -> list[str]:
    """The plan of the request's page: its statement that orders runs. A statement the service
    prepared (EXECUTE name) is prepared again here, from the PREPARE the warm-up requests sent
    (``warm``, every case's so far)."""
    import psycopg2
    prepares = {m[1]: m[0] for sql, _ in warm + sent if (m := re.match(r"PREPARE (\w+) AS .*", sql, re.S))}

    def text(sql: str) -> str:
        m = re.match(r"EXECUTE (\w+)", sql)
        return prepares.get(m[1], "") if m else sql

    sql, params = next((sql, params) for sql, params in sent
                       if 'FROM "optimization_run"' in text(sql) and "ORDER BY" in text(sql) and "LIMIT" in text(sql))
    conn = psycopg2.connect(url)
    try:
        with conn.cursor() as cur:
            if sql.startswith("EXECUTE"):
                cur.execute(text(sql))
            cur.execute("EXPLAIN (ANALYZE, COSTS OFF) " + sql, params)
            return [row[0] for row in cur.fetchall()]
    finally:
        conn.close()


def _timed(client, owner, params: dict) -> float:
    started = time.perf_counter()
    response = client.get("/api/v2/solutions/runs", headers=owner.headers,
                          params={"workspaceId": owner.workspace_id, **params})
    elapsed = (time.perf_counter() - started) * 1000
    assert response.status_code == 200, response.text
    return elapsed


def _cases(client, owner, agents: list[str], args, url: str) -> list[list[str]]:
    state = base64.b64encode(json.dumps({"status": ["pendingReview"], "agentIds": [agents[3]]}).encode()).decode()
    every = base64.b64encode(json.dumps(
        {"status": ["generating", "pendingReview", "completed", "failed"]}).encode()).decode()
    offset = min(50_000, args.runs // 2)
    cases = [("first page (newest first)", {}, f"{args.runs:,} runs: the tally's summary"),
             ("first page, every status named", {"filters": every}, "baseline: counts every run, as before the tally"),
             (f"offset {offset:,}", {"offset": offset}, ""),
             ("sorted by status, asc", {"sortBy": "status", "sortOrder": "asc"}, ""),
             ("sorted by status, desc", {"sortBy": "status"}, ""),
             ("sorted by feedbackCount, asc", {"sortBy": "feedbackCount", "sortOrder": "asc"}, ""),
             ("sorted by createdAt, asc", {"sortOrder": "asc"}, ""),
             ("sorted by solutionCount, desc", {"sortBy": "solutionCount"}, ""),
             ("search: an agent's name", {"search": "charlie"}, "a tenth of the runs"),
             ("search: solution titles", {"search": "fix 4242 of"}, "LIKE over every title"),
             ("filter: one status, one agent", {"filters": state}, "a fortieth of the runs")]
    rows, warm = [], []
    for name, params, note in cases:
        params = {"limit": 20, **params}
        # Every statement sent so far: a statement prepared by an earlier case is not prepared again.
        warm += [statement for _ in range(5) for statement in _statements(client, owner, params)]
        sent = _statements(client, owner, params)
        times = [_timed(client, owner, params) for _ in range(args.requests)]
        rows.append([f"GET /solutions/runs: {name}", f"{median(times):.1f}", f"{percentile(times, 99):.1f}",
                     str(len(sent)), note or f"{args.requests} requests"])
        count = len(sent)
        if args.explain:
            log(f"plan of the page, {name}:\n  " + "\n  ".join(_explain(url, sent, warm)))
        log(f"{rows[-1][0]}: p50 {rows[-1][1]} ms, p99 {rows[-1][2]} ms, {count} statements")
    return rows


if __name__ == "__main__":
    main()
