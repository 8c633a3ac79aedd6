"""GET /analytics/structured-data on PostgreSQL with --calls (default 100,000) calls and ten
structured-data fields, one value of each per call (1,000,000 values), spread over 90 days: the
latency of each granularity, and its ratio to the bare SQL the domain runs for it.

  seed      a scratch database on the server of --postgres-url (dropped afterwards); a workspace
            and token from `python -m api.admin bootstrap`; the calls copied straight into the call
            table as scripts/bench_calls seeds them (started_at spread over 90 days); ten fields
            made through the API (POST /insights: four numbers, three booleans, three enums of five
            values); their values written by one INSERT ... SELECT from the calls (numbers uniform
            in [0, 1000), booleans and enum values from the call's row number); VACUUM ANALYZE
  API       `python -m api.serve`, WORKERS=1, STT_ENABLED=false, LOG_LEVEL=--log-level (default
            INFO: one access-log line per request), rate limiting on with limits never reached.
            For each granularity (hour, day, month) over the whole 90 days: --warmup requests
            unrecorded, then --requests (default 30) one after another on one keep-alive
            connection; median and p90 of the whole request as the client sees it. The answer is
            checked: ten fields, each counting every call
  bare SQL  the statements the domain runs for the same request, captured by calling
            models.calls.analytics in this process and recorded as executed, then run as they are through
            psycopg2 on one connection, --requests times, each run all of them with their rows
            fetched: median and p90. ratio = API median / bare SQL median (goal <= 1.3)
  domain    models.calls.analytics.structured_data itself in this process (the SQL and the assembly of the
            result, no HTTP, no JSON): its median, to say where the API's overhead lies

A Markdown table on stdout, progress on stderr.

    scripts/bench_analytics [--calls 100000] [--requests 30] [--warmup 3] [--postgres-url URL]
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
    wait_ready,
)

GRANULARITIES = ("hour", "day", "month")
GOAL_RATIO = 1.3
FIELDS = ([("score_%d" % i, "number", None) for i in range(4)]
          + [("flag_%d" % i, "boolean", None) for i in range(3)]
          + [("choice_%d" % i, "enum", ["red", "green", "blue", "amber", "violet"]) for i in range(3)])


def parse_args(argv=None):
    parser = options.parser("bench_analytics", __doc__, options.rounds(requests=30, warmup=3),
                            options.log_level(), options.postgres())
    parser.add_argument("--calls", type=int, default=100_000, help="calls seeded, ten values each (default 100000)")
    return parser.parse_args(argv)


def seed_values(database_url: str, workspace_id: str, field_ids: list[tuple[int, str]]) -> float:
    """One value per call and field, as ingest would have stored them (models.calls.insights.CallValue)."""
    import psycopg2

    started = time.monotonic()
    conn = psycopg2.connect(database_url)
    try:
        with conn, conn.cursor() as cur:
            for n, (field_id, type_) in enumerate(field_ids):
                number = "(random() * 1000)" if type_ == "number" else "NULL"
                boolean = f"((row_number() OVER (ORDER BY id)) %% {n + 2} = 0)" if type_ == "boolean" else "NULL"
                text = ("(ARRAY['red','green','blue','amber','violet'])[1 + (row_number() OVER (ORDER BY id)) %% 5]"
                        if type_ == "enum" else "NULL")
                cur.execute(
                    "INSERT INTO call_value (workspace_id, call_id, field_id, started_at, agent_id, call_type, "
                    f"number_value, boolean_value, text_value) SELECT workspace_id, id, %s, started_at, agent_id, "
                    f"call_type, {number}, {boolean}, {text} FROM call WHERE workspace_id = %s",
                    (field_id, workspace_id))
    finally:
        conn.close()
    return time.monotonic() - started


def captured_statements(database_url: str, data_dir: Path, workspace_id: str, start: datetime, end: datetime,
                        granularity: str) -> tuple[list[tuple[str, tuple]], list[float]]:
    """The SQL models.calls.analytics runs for this request, as executed; and timings of the domain call."""
    sys.path.insert(0, str(ROOT))
    from models.calls import analytics
    from models.kernel.db import database, open_database, session

    if database.obj is None:
        open_database(database_url, data_dir, 2, 10)
    recorded: list[tuple[str, tuple]] = []
    execute = database.obj.execute_sql

    def recording(sql, params=None, *args, **kwargs):
        recorded.append((sql, tuple(params or ())))
        return execute(sql, params, *args, **kwargs)

    with session():
        database.obj.execute_sql = recording
        try:
            analytics.structured_data(workspace_id=workspace_id, start=start, end=end, granularity=granularity)
        finally:
            database.obj.execute_sql = execute
        timings = []
        for _ in range(10):
            began = time.perf_counter()
            analytics.structured_data(workspace_id=workspace_id, start=start, end=end, granularity=granularity)
            timings.append((time.perf_counter() - began) * 1000)
    return recorded, timings


def time_bare(database_url: str, statements: list[tuple[str, tuple]], warmup: int, requests: int) -> list[float]:
    import psycopg2

    conn = psycopg2.connect(database_url)
    conn.autocommit = True
    timings = []
    try:
        with conn.cursor() as cur:
            for n in range(warmup + requests):
                began = time.perf_counter()
                for sql, params in statements:
                    cur.execute(sql, params)
                    cur.fetchall()
                if n >= warmup:
                    timings.append((time.perf_counter() - began) * 1000)
    finally:
        conn.close()
    return timings


def time_api(client, url: str, params: dict, warmup: int, requests: int, calls: int) -> list[float]:
    timings = []
    for n in range(warmup + requests):
        began = time.perf_counter()
        response = client.get(url, params=params)
        elapsed = (time.perf_counter() - began) * 1000
        if response.status_code != 200:
            raise RuntimeError(f"GET {url} {params}: {response.status_code} {response.text[:300]}")
        if n == 0:
            data = response.json()["data"]["result"]["data"]
            counts = [entry["summary"]["count"] for entry in data]
            if len(data) != len(FIELDS) or any(count != calls for count in counts):
                raise RuntimeError(f"{params}: expected {len(FIELDS)} fields counting {calls} calls, got {counts}")
        if n >= warmup:
            timings.append(elapsed)
    return timings


def main(argv=None) -> int:
    import httpx

    args = parse_args(argv)
    rows = []
    with CLEANUP.scope():
        data_dir = scratch_dir("bench_analytics_")
        database_url = scratch_postgres(args.postgres_url, f"bench_analytics_{os.getpid()}")
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
        with httpx.Client(headers=headers, timeout=120) as client:
            fields = []
            for name, type_, values in FIELDS:
                body = {"name": name, "type": type_, **({"enumValues": values} if values else {})}
                response = client.post(f"{base}/insights", params={"workspaceId": ws}, json=body)
                if response.status_code != 200:
                    raise RuntimeError(f"POST /insights: {response.status_code} {response.text[:300]}")
                fields.append((response.json()["data"]["result"]["insight"]["id"], type_))
            log(f"seeded {args.calls * len(fields)} values in {seed_values(database_url, ws, fields):.1f} s")
            bench_calls.settle_postgres(database_url)
            end = datetime.utcnow().replace(microsecond=0) + timedelta(hours=1)
            start = end - bench_calls.SPREAD - timedelta(days=1)
            for granularity in GRANULARITIES:
                params = {"workspaceId": ws, "granularity": granularity, "since": start.isoformat() + "Z",
                          "until": end.isoformat() + "Z"}
                api = time_api(client, f"{base}/analytics/structured-data", params, args.warmup, args.requests,
                               args.calls)
                statements, domain = captured_statements(database_url, data_dir, ws, start, end, granularity)
                bare = time_bare(database_url, statements, args.warmup, args.requests)
                row = (granularity, median(api), percentile(api, 90), median(bare), percentile(bare, 90),
                       median(domain), median(api) / median(bare), len(statements))
                log(f"  {granularity:6} API p50 {row[1]:8.1f} ms  bare SQL p50 {row[3]:8.1f} ms  "
                    f"domain p50 {row[5]:8.1f} ms  ratio {row[6]:.2f}")
                rows.append(row)
        server.check_alive()
    print(f"## GET /analytics/structured-data: {args.calls} calls, {args.calls * len(FIELDS)} values, 90 days, "
          f"10 fields\n")
    print(f"{platform.node()}, {os.cpu_count()} cores, PostgreSQL; {args.requests} requests per cell after "
          f"{args.warmup} unrecorded, one at a time\n")
    print("| granularity | buckets per field | API p50 ms | API p90 ms | bare SQL p50 ms | bare SQL p90 ms "
          "| domain p50 ms | API / bare SQL | goal |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    spans = {"hour": 91 * 24, "day": 91, "month": 4}
    for granularity, api50, api90, bare50, bare90, domain50, ratio, _ in rows:
        verdict = "met" if ratio <= GOAL_RATIO else f"missed (> {GOAL_RATIO})"
        print(f"| {granularity} | ~{spans[granularity]} | {api50:.1f} | {api90:.1f} | {bare50:.1f} | {bare90:.1f} "
              f"| {domain50:.1f} | {ratio:.2f} | {verdict} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
