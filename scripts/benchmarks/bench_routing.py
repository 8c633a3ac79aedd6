"""What routing costs a request, by the place of its operation in the contract: the management
API's ASGI app in this process (SQLite in a scratch DATA_DIR, LOG_LEVEL=WARNING), driven directly
with one GET after another and no credential, so a request is routing, the middleware and the
401 (or 404 for a path of no operation) and no SQL. For each path: the routes whose expression
was tried (starlette's Route.matches and Mount.matches, counted), and the median over --rounds
rounds of --requests requests of the time per request. With every route tried in turn, a late
group's request cost more than the first group's; routed by first segment (api.route_index), the
figures stay flat as groups are added.

A Markdown table on stdout, progress on stderr. Compare two commits by running the script of
one in a worktree of the other (`git worktree add /tmp/old HEAD~1`; its scripts/ on its tree).

    scripts/bench_routing [--requests 2000] [--rounds 5] [--path /api/v2/...]...
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import time

from starlette.routing import Mount, Route

from . import harness, options

PATHS = ["/api/v2/permissions", "/api/v2/call", "/api/v2/webhooks/events", "/api/v2/workspace/logs",
         "/api/v2/no-such-operation"]


def parse_args(argv=None):
    parser = options.parser("bench_routing", __doc__, options.rounds(requests=2000, rounds=5))
    parser.add_argument("--path", action="append", help="a path to measure (repeatable); default: a few, first to last")
    return parser.parse_args(argv)


def make_app():
    from api.app import create_app
    from core.settings import Settings
    return create_app(Settings.from_env())


def scope(path: str) -> dict:
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
            "path": path, "raw_path": path.encode(), "root_path": "", "query_string": b"",
            "headers": [(b"host", b"bench")], "server": ("bench", 80), "client": ("127.0.0.1", 1)}


@contextlib.contextmanager
def counting_tries():
    """Counts the routes whose expression starlette tries meanwhile; the wrapper is gone after,
    so the timed requests pay nothing for it."""
    tried = [0]
    originals = {cls: cls.matches for cls in (Route, Mount)}
    for cls, original in originals.items():
        def counted(route, request_scope, _original=original):
            tried[0] += 1
            return _original(route, request_scope)
        cls.matches = counted
    try:
        yield tried
    finally:
        for cls, original in originals.items():
            cls.matches = original


async def receive() -> dict:
    return {"type": "http.request", "body": b"", "more_body": False}


async def measure(app, path: str, requests: int, rounds: int) -> tuple[int, int, list[float]]:
    """The status of its answer, the routes one request tried, and the µs per request of each round."""
    status = []

    async def send(message):
        if message["type"] == "http.response.start":
            status.append(message["status"])

    for _ in range(300):  # warm-up
        await app(scope(path), receive, send)
    with counting_tries() as tried:
        await app(scope(path), receive, send)
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(requests):
            await app(scope(path), receive, send)
        times.append((time.perf_counter() - started) / requests * 1e6)
    return status[-1], tried[0], times


def main(argv=None) -> int:
    args = parse_args(argv)
    with harness.CLEANUP.scope():
        os.environ.update(DATA_DIR=str(harness.scratch_dir("bench_routing_")), STT_ENABLED="false",
                          LOG_LEVEL="WARNING", RATE_LIMITS_ENABLED="false")
        app = make_app()
        rows = []
        for path in args.path or PATHS:
            harness.log(f"GET {path}")
            status, tried, times = asyncio.run(measure(app, path, args.requests, args.rounds))
            rows.append((path, status, tried, harness.median(times), times))
    print("| GET | status | routes tried | µs per request (median of rounds) | rounds |")
    print("|---|---:|---:|---:|---|")
    for path, status, tried, mid, times in rows:
        print(f"| {path} | {status} | {tried} | {mid:.1f} | {', '.join(f'{t:.0f}' for t in times)} |")
    print(f"\n{args.rounds} rounds of {args.requests} requests per path, in process, no credential "
          f"(`scripts/bench_routing --requests {args.requests} --rounds {args.rounds}`).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
