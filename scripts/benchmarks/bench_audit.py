"""The audit log: what it costs a mutating request, and how fast its first page lists from a
million entries.

  A/B       the management API in this process (Starlette's test client, one request after
            another, LOG_LEVEL=WARNING, rate limiting on with limits never reached), on a scratch
            PostgreSQL database, or SQLite with --sqlite: PATCH /workspace (a name change: one
            read and one write of the domain) --requests times per round, rounds alternating
            "with" (as shipped) and "without" (the audit entry's write replaced by nothing), after
            --warmup requests of each; per round the median request; the table gives the median
            of the rounds' medians and the difference
  listing   PostgreSQL only: --entries (default 1,000,000) audit entries of one workspace, spread
            over 90 days, ten actors and twenty operations, inserted by one INSERT ... SELECT;
            VACUUM ANALYZE; then GET /workspace/logs --requests times per case: the first page
            (limit 20), filtered by an actor (a tenth of the entries), by an operation and a time
            range, and a page at offset 100,000: p50 and p99 of each

A Markdown table on stdout, progress on stderr.

    scripts/bench_audit [--requests 300] [--rounds 6] [--entries 1000000] [--sqlite] [--postgres-url URL]
"""
from __future__ import annotations

import os
import time

from . import options
from .harness import CLEANUP, log, median, percentile, scratch_dir, scratch_postgres


def main(argv=None) -> None:
    parser = options.parser("bench_audit", __doc__, options.rounds(requests=300, rounds=6, warmup=50), options.postgres())
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--sqlite", action="store_true", help="A/B on SQLite; no listing case")
    args = parser.parse_args(argv)
    with CLEANUP.guard():
        work = scratch_dir("bench-audit-")
        url = None if args.sqlite else scratch_postgres(args.postgres_url, f"bench_audit_{os.getpid()}")
        client, owner = _app(url, work)
        rows = _ab(client, owner, args)
        if url is not None:
            rows += _listing(client, owner, url, args)
        print("| case | p50 ms | p99 ms | note |\n|---|---:|---:|---|")
        for row in rows:
            print("| " + " | ".join(row) + " |")


def _app(url: str | None, work):
    os.environ["LOG_LEVEL"] = "WARNING"
    from starlette.testclient import TestClient

    from api.app import create_app
    from core.settings import Settings
    from tests import factories
    settings = Settings(database_url=url, data_dir=str(work), transcription_workers=0, webhook_workers=0,
                        retention_interval_s=0, default_requests_per_minute=10**8, default_requests_per_day=10**9,
                        log_level="WARNING")
    client = TestClient(create_app(settings))
    client.__enter__()
    CLEANUP.push(lambda: client.__exit__(None, None, None))
    return client, factories.workspace("Bench")


def _timed(client, method: str, path: str, headers: dict, **kwargs) -> float:
    started = time.perf_counter()
    response = client.request(method, path, headers=headers, **kwargs)
    elapsed = (time.perf_counter() - started) * 1000
    assert response.status_code == 200, response.text
    return elapsed


def _ab(client, owner, args) -> list[list[str]]:
    from api import audit_trail
    shipped = audit_trail.AuditedOperation.finish
    params = {"workspaceId": owner.workspace_id}

    def run(audited: bool, count: int) -> list[float]:
        audit_trail.AuditedOperation.finish = shipped if audited else (lambda self, *a, **k: None)
        try:
            return [_timed(client, "PATCH", "/api/v2/workspace", owner.headers, params=params,
                           json={"name": f"Bench {i % 7}"}) for i in range(count)]
        finally:
            audit_trail.AuditedOperation.finish = shipped

    run(True, args.warmup)
    run(False, args.warmup)
    medians = {True: [], False: []}
    for round_ in range(args.rounds):
        for audited in ((True, False) if round_ % 2 == 0 else (False, True)):
            medians[audited].append(median(run(audited, args.requests)))
        log(f"round {round_ + 1}: with {medians[True][-1]:.3f} ms, without {medians[False][-1]:.3f} ms")
    with_, without = median(medians[True]), median(medians[False])
    return [["PATCH /workspace, audited (as shipped)", f"{with_:.3f}", "", f"median of {args.rounds} rounds' medians"],
            ["PATCH /workspace, audit write removed", f"{without:.3f}", "",
             f"audit: +{with_ - without:.3f} ms per request ({(with_ / without - 1) * 100:.1f} %)"]]


def _listing(client, owner, url: str, args) -> list[list[str]]:
    import psycopg2
    log(f"seeding {args.entries:,} audit entries")
    conn = psycopg2.connect(url)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("""
            INSERT INTO audit_entry (workspace_id, occurred_at, actor_user_id, actor_credential_id, actor_kind,
                                     operation_id, resource_type, resource_id, request_id, source_address, changes)
            SELECT %s, now() AT TIME ZONE 'UTC' - (i * interval '90 days' / %s), 'user-' || (i %% 10),
                   'cred-' || (i %% 10), 'access_token', 'operation' || (i %% 20), 'things', 'thing-' || i,
                   md5(i::text), '203.0.113.' || (i %% 250), '{"name": "x"}'
            FROM generate_series(1, %s) AS i""", (owner.workspace_id, args.entries, args.entries))
        cur.execute("VACUUM ANALYZE audit_entry")
    conn.close()
    week_ago = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 7 * 86400))
    cases = [("first page", {}), ("actor filter (1/10)", {"actorUserId": "user-3"}),
             ("operation + since (1/20 of a week)", {"operationId": "operation7", "since": week_ago}),
             ("offset 100,000", {"offset": 100_000})]
    rows = []
    for name, filters in cases:
        params = {"workspaceId": owner.workspace_id, "limit": 20, **filters}
        for _ in range(5):
            _timed(client, "GET", "/api/v2/workspace/logs", owner.headers, params=params)
        times = [_timed(client, "GET", "/api/v2/workspace/logs", owner.headers, params=params)
                 for _ in range(args.requests)]
        rows.append([f"GET /workspace/logs, {args.entries:,} entries: {name}", f"{median(times):.1f}",
                     f"{percentile(times, 99):.1f}", f"{args.requests} requests"])
        log(rows[-1][0] + f": p50 {rows[-1][1]} ms, p99 {rows[-1][2]} ms")
    return rows


if __name__ == "__main__":
    main()
