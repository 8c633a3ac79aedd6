"""What one authenticated request costs the management API's process: its ASGI app in this
process (rate limiting on, limits never reached, the access log on and written nowhere), driven
with one GET after another carrying a bootstrapped access token. On PostgreSQL the figures include
the driver's side of each round trip, not the server's.

By default, the CPU time per request, the median of --rounds rounds of --requests requests. With
--instructions, the instructions the process executes per request instead, counted by valgrind's
cachegrind (Debian's valgrind package): the script runs itself twice under it, with --requests N
and 2N requests after the same warm-up, and divides the difference by N, so start-up, the
warm-up and the database's creation cancel out. A count is the same on a loaded machine and a
quiet one (to within a few tenths of a percent), so two commits can be compared on a shared host
where timings drift by a fifth; it does not weigh a cache miss more than an addition.

A Markdown line on stdout, progress on stderr. Compare two commits by running the script of one
in a worktree of the other (`git worktree add /tmp/old HEAD~1`; its scripts/ on its tree).

    scripts/bench_request [--database sqlite|postgresql] [--path /api/v2/permissions]
                          [--requests 2000] [--rounds 5] [--instructions]
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
import re
import shutil
import subprocess
import sys
import time
import uuid

from . import harness, options

WARM_UP = 300


def parse_args(argv=None):
    parser = options.parser("bench_request", __doc__, options.rounds(requests=2000, rounds=5), options.postgres())
    parser.add_argument("--database", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--path", default="/api/v2/permissions",
                        help="the GET to repeat; {workspaceId} is replaced by the bootstrapped workspace's id "
                             "(default /api/v2/permissions)")
    parser.add_argument("--instructions", action="store_true", help="count instructions under cachegrind")
    parser.add_argument("--only-count", type=int, help=argparse.SUPPRESS)  # one run under cachegrind
    args = parser.parse_args(argv)
    if min(args.requests, args.rounds) < 1:
        parser.error("--requests and --rounds need whole numbers from 1")
    return args


def make_app(args):
    """The app on a scratch database, and the headers and path of the request to repeat."""
    data_dir = harness.scratch_dir("bench_request_")
    database_url = None
    if args.database == "postgresql":
        database_url = harness.scratch_postgres(args.postgres_url, f"bench_request_{uuid.uuid4().hex[:8]}")
    env = harness.service_env(DATA_DIR=data_dir, DATABASE_URL=database_url, STT_ENABLED="false", LOG_LEVEL="INFO")
    owner = harness.bootstrap(env)
    os.environ.clear()
    os.environ.update(env)
    from api.app import create_app
    from core.settings import Settings
    app = create_app(Settings.from_env())
    # Every line formatted and handed to the handler, as a server's are, then dropped.
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler):
            handler.setStream(open(os.devnull, "w"))
    path = args.path.replace("{workspaceId}", owner["workspaceId"])
    return app, path, [(b"host", b"bench"), (b"authorization", f"Bearer {owner['token']}".encode())]


def scope(path: str, headers: list) -> dict:
    route, _, query = path.partition("?")
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
            "path": route, "raw_path": route.encode(), "root_path": "", "query_string": query.encode(),
            "headers": headers, "server": ("bench", 80), "client": ("127.0.0.1", 1)}


async def run(app, path: str, headers: list, counts: list[int]) -> list[float]:
    """Each count's requests in turn after the warm-up; the CPU µs per request of each."""
    statuses = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    for _ in range(WARM_UP):
        await app(scope(path, headers), receive, send)
    if set(statuses) != {200}:
        raise SystemExit(f"GET {path} answered {sorted(set(statuses))}, not only 200")
    times = []
    for count in counts:
        started = time.process_time()
        for _ in range(count):
            await app(scope(path, headers), receive, send)
        times.append((time.process_time() - started) / count * 1e6)
    return times


def instructions(args) -> float:
    """Instructions per request: two cachegrind runs of this script, N and 2N requests."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("--instructions needs valgrind: apt-get install valgrind")
    runs = []
    for count in (args.requests, 2 * args.requests):
        command = [valgrind, "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                   sys.executable, str(harness.SCRIPTS / "bench_request"), "--database", args.database, "--path", args.path,
                   "--postgres-url", args.postgres_url, "--only-count", str(count)]
        harness.log(f"cachegrind: {count} requests (a few minutes)")
        runs.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
    totals = []
    for process in runs:
        _, err = process.communicate()
        found = re.search(r"I\s+refs:\s+([\d,]+)", err)
        if process.returncode != 0 or found is None:
            raise SystemExit(f"the cachegrind run failed ({process.returncode}): {err[-2000:]}")
        totals.append(int(found.group(1).replace(",", "")))
    return (totals[1] - totals[0]) / args.requests


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.instructions:
        per_request = instructions(args)
        print(f"| {args.database} | GET {args.path} | {per_request / 1e6:.3f} M instructions per request |")
        print(f"\n(`scripts/bench_request --database {args.database} --path '{args.path}' --requests {args.requests} "
              f"--instructions`: two cachegrind runs, {args.requests} and {2 * args.requests} requests.)")
        return 0
    with harness.CLEANUP.scope():
        app, path, headers = make_app(args)
        if args.only_count:
            asyncio.run(run(app, path, headers, [args.only_count]))
            return 0
        harness.log(f"GET {path} on {args.database}: {args.rounds} rounds of {args.requests}")
        times = asyncio.run(run(app, path, headers, [args.requests] * args.rounds))
    print(f"| {args.database} | GET {args.path} | {harness.median(times):.1f} µs CPU per request "
          f"(median of rounds) | rounds: {', '.join(f'{t:.0f}' for t in times)} |")
    print(f"\n(`scripts/bench_request --database {args.database} --path '{args.path}' --requests {args.requests} "
          f"--rounds {args.rounds}`, in process.)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
