"""GET /call/metrics on PostgreSQL with --calls (default 1,000,000) calls of five agents spread over
90 days: the latency of each granularity, grouped by agent or not, and its ratio to the bare SQL
the domain runs for it.

  seed      a scratch database on the server of --postgres-url (dropped afterwards); a workspace
            and token from `python -m api.admin bootstrap`; the calls copied straight into the call
            table as scripts/bench_calls seeds them (started_at spread over 90 days, durations
            uniform in [20 s, 600 s)); five agents made through the API (POST /agents), one of them
            (or none) and an end reason (ended by either side, silence, voicemail, no answer)
            written into each call by one UPDATE from its row number; VACUUM ANALYZE
  API       `python -m api.serve`, WORKERS=1, STT_ENABLED=false, LOG_LEVEL=--log-level (default
            INFO), rate limiting on with limits never reached. For each case (granularity, grouped
            or not) over the whole 90 days: --warmup requests unrecorded, then --requests (default
            10) on one keep-alive connection, each followed by the bare SQL's run; median and p90 of
            the whole request as the client sees it. The answer is checked: its buckets count every call
  bare SQL  the two statements the domain runs for the same request (models.calls.metrics.statements),
            run as they are through psycopg2 on one connection, their rows fetched, right after each
            request (so that a change in the machine's load weighs on both alike): median and p90.
            ratio = API median / bare SQL median (goal <= 1.3)
  domain    models.calls.metrics.call_metrics itself in this process (the SQL and the layout of the
            result, no HTTP, no JSON): its median, to say where the API's overhead lies

A Markdown table on stdout, progress on stderr.

    scripts/bench_metrics [--calls 1000000] [--requests 10] [--warmup 2] [--postgres-url URL]
"""
from __future__ import annotations

import os
import platform
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

from . import bench_calls, options
from .harness import (
    CLEANUP,
    ROOT,
    Server,
    bootstrap,
    free_port,
    log,
    median,
    percentile,
    scratch_dir,
    scratch_postgres,
    service_env,
    settle_postgres,
    wait_ready,
)

CASES = (("day", None), ("hour", None), ("month", "agent"), ("total", "agent"))
GOAL_RATIO = 1.3
AGENTS = 5
REASONS = ("customer-ended-call", "assistant-ended-call", "silence-timed-out", "voicemail", "customer-did-not-answer",
           "customer-ended-call", "assistant-forwarded-call")


def parse_args(argv=None):
    parser = options.parser("bench_metrics", __doc__, options.rounds(requests=10, warmup=2),
                            options.log_level(), options.postgres())
    parser.add_argument("--calls", type=int, default=1_000_000, help="calls seeded (default 1000000)")
    return parser.parse_args(argv)


def spread_agents_and_reasons(database_url: str, workspace_id: str, agent_ids: list[str]) -> float:
    """Each call's agent (every sixth none) and end reason, from its row number."""
    import psycopg2

    started = time.monotonic()
    agents = "ARRAY[" + ", ".join(["NULL"] + [f"'{a}'" for a in agent_ids]) + "]::text[]"
    reasons = "ARRAY[" + ", ".join(f"'{r}'" for r in REASONS) + "]"
    conn = psycopg2.connect(database_url)
    try:
        with conn, conn.cursor() as cur:
            cur.execute(
                f"UPDATE call SET agent_id = ({agents})[1 + n %% {len(agent_ids) + 1}], "
                f"ended_reason = ({reasons})[1 + n %% {len(REASONS)}] "
                "FROM (SELECT id AS call_id, row_number() OVER (ORDER BY id) AS n FROM call WHERE workspace_id = %s) "
                "AS numbered WHERE call.id = numbered.call_id", (workspace_id,))
    finally:
        conn.close()
    return time.monotonic() - started


def domain_statements(database_url: str, data_dir: Path, query) -> tuple[list[tuple[str, list]], list[float]]:
    """The statements models.calls.metrics runs for the query; and timings of the domain call."""
    sys.path.insert(0, str(ROOT))
    from models.calls import metrics
    from models.kernel.db import database, open_database, session

    if database.obj is None:
        open_database(database_url, data_dir, 2, 10)
    with session():
        statements = metrics.statements(metrics.Query(**query))
        timings = []
        for _ in range(5):
            began = time.perf_counter()
            metrics.call_metrics(metrics.Query(**query))
            timings.append((time.perf_counter() - began) * 1000)
    return statements, timings


def time_interleaved(client, url: str, params: dict, database_url: str, statements, warmup: int, requests: int,
                     calls: int) -> tuple[list[float], list[float], int]:
    """One request, then one bare run of the statements, in turn: a machine whose load changes during
    the run (other processes, the page cache) weighs on both alike."""
    import psycopg2

    api, bare, buckets = [], [], 0
    conn = psycopg2.connect(database_url)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            for n in range(warmup + requests):
                began = time.perf_counter()
                response = client.get(url, params=params)
                elapsed = (time.perf_counter() - began) * 1000
                if response.status_code != 200:
                    raise RuntimeError(f"GET {url} {params}: {response.status_code} {response.text[:300]}")
                if n == 0:
                    series = response.json()["data"]["result"]["series"]
                    counted = sum(b["count"] for s in series for b in s["buckets"])
                    buckets = sum(len(s["buckets"]) for s in series)
                    if counted != calls:
                        raise RuntimeError(f"{params}: expected {calls} calls counted, got {counted}")
                began = time.perf_counter()
                for sql, values in statements:
                    cur.execute(sql, values)
                    cur.fetchall()
                if n >= warmup:
                    api.append(elapsed)
                    bare.append((time.perf_counter() - began) * 1000)
    finally:
        conn.close()
    return api, bare, buckets


def main(argv=None) -> int:
    import httpx

    args = parse_args(argv)
    rows = []
    with CLEANUP.scope():
        data_dir = scratch_dir("bench_metrics_")
        database_url = scratch_postgres(args.postgres_url, f"bench_metrics_{os.getpid()}")
        env = service_env(WORKERS=1, DATA_DIR=data_dir, DATABASE_URL=database_url, STT_ENABLED="false",
                          LOG_LEVEL=args.log_level, TRANSCRIPTION_WORKERS=0)
        owner = bootstrap(env)
        ws = owner["workspaceId"]
        seconds, _, _ = bench_calls.seed_calls(database_url, ws, args.calls)
        log(f"seeded {args.calls} calls in {seconds:.1f} s")
        port = free_port()
        base = f"http://127.0.0.1:{port}/api/v2"
        headers = {"Authorization": f"Bearer {owner['token']}"}
        server = Server([sys.executable, "-m", "api.serve"], dict(env, API_PORT=str(port)), data_dir / "api.log")
        wait_ready(server, f"{base}/permissions", headers)
        with httpx.Client(headers=headers, timeout=600) as client:
            agent_ids = []
            for n in range(AGENTS):
                response = client.post(f"{base}/agents", params={"workspaceId": ws}, json={"name": f"Agent {n}"})
                if response.status_code != 200:
                    raise RuntimeError(f"POST /agents: {response.status_code} {response.text[:300]}")
                agent_ids.append(response.json()["data"]["result"]["agent"]["id"])
            log(f"agents and end reasons spread in {spread_agents_and_reasons(database_url, ws, agent_ids):.1f} s")
            settle_postgres(database_url)
            end = datetime.utcnow().replace(microsecond=0) + timedelta(hours=1)
            start = end - bench_calls.SPREAD - timedelta(days=1)
            for granularity, group_by in CASES:
                params = {"workspaceId": ws, "granularity": granularity, "since": start.isoformat() + "Z",
                          "until": end.isoformat() + "Z", **({"groupBy": group_by} if group_by else {})}
                statements, domain = domain_statements(database_url, data_dir, {
                    "workspace_id": ws, "start": start, "end": end, "granularity": granularity,
                    "group_by": group_by})
                api, bare, buckets = time_interleaved(client, f"{base}/call/metrics", params, database_url,
                                                      statements, args.warmup, args.requests, args.calls)
                row = (granularity, group_by or "-", buckets, median(api), percentile(api, 90), median(bare),
                       percentile(bare, 90), median(domain), median(api) / median(bare))
                log(f"  {granularity:6} {row[1]:5} API p50 {row[3]:8.1f} ms  bare SQL p50 {row[5]:8.1f} ms  "
                    f"domain p50 {row[7]:8.1f} ms  ratio {row[8]:.2f}")
                rows.append(row)
        server.check_alive()
    print(f"## GET /call/metrics: {args.calls} calls of {AGENTS} agents (and none), 90 days\n")
    print(f"{platform.node()}, {os.cpu_count()} cores, PostgreSQL; {args.requests} requests per cell after "
          f"{args.warmup} unrecorded, one at a time\n")
    print("| granularity | groupBy | buckets | API p50 ms | API p90 ms | bare SQL p50 ms | bare SQL p90 ms "
          "| domain p50 ms | API / bare SQL | goal |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for granularity, group_by, buckets, api50, api90, bare50, bare90, domain50, ratio in rows:
        verdict = "met" if ratio <= GOAL_RATIO else f"missed (> {GOAL_RATIO})"
        print(f"| {granularity} | {group_by} | {buckets} | {api50:.1f} | {api90:.1f} | {bare50:.1f} | {bare90:.1f} "
              f"| {domain50:.1f} | {ratio:.2f} | {verdict} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
