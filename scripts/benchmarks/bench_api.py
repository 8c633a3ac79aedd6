"""Throughput and latency of the management API through uvicorn, next to a bare connexion app and a
bare Starlette app served the same way, all driven by one compiled load generator (h2load) in one run.

Targets, each a fresh server on a free 127.0.0.1 port, with each --workers count:

  bare Starlette   one route answering {"success": true, "data": {"message": "OK", "result": {}}}
  bare connexion   a connexion AsyncApp from a tiny OpenAPI 3.0 spec, strict validation, no security,
                   plain def handlers: GET /api-keys (a required query parameter workspaceId, string,
                   minLength 1, and an optional limit, integer 1..100, default 20) and GET /permissions
                   answering the very documents our two operations answer (captured from our API,
                   seeded as below, before the cells), and GET /envelope (the same parameters as
                   /api-keys) answering the fixed envelope above. Our operations are compared with the
                   same document served bare: what is left is what our spine costs, not the size of
                   the answer
  management API   `python -m api.serve` on SQLite or a scratch PostgreSQL database, rate limiting
                   on (limits never reached), LOG_LEVEL as --log-level (default INFO: one access-log
                   line per request), 200 API keys seeded; GET /api-keys?limit=20, GET /permissions
                   (and POST /api-keys with --post). PostgreSQL is measured in its steady state: after
                   the seeding, VACUUM ANALYZE, as autovacuum leaves a table that has lived a while
                   (right after 200 inserts its visibility map is empty and the page's count visits
                   every row: 0.37 ms of server time instead of 0.11)
  access log off   the same server and data again with LOG_LEVEL=WARNING (--no-log-off skips it)

First, h2load runs against a trivial one-process uvloop server answering a fixed response: the
generator's ceiling on this machine, far above what the real targets reach. Each cell: --cell-warmup
seconds of unrecorded load, then --duration seconds measured on the same `concurrency` keep-alive
connections, closed loop. The connections are made in the unrecorded part: a busy uvloop server
accepts one waiting connection per turn of its loop, so 16 fresh connections to one worker that
holds the loop for each request (ours does) wait up to 16 turns for their first answer, and in a
short run those first requests alone are the slowest percent (PostgreSQL, 1 worker, GET /api-keys:
p99 3.9-5.8 × p50 with them, 1.4-1.8 × without). A management-API cell is measured in --rounds
rounds, each right after a run of bare connexion serving the same document (kept running for this):
its goal ratio is the median of the rounds' ratios, which the machine's drift over the minutes
between cells does not reach. Markdown table on stdout, progress on stderr; exit status 1 when any
cell saw a non-2xx answer or a socket error.

h2load (Debian's nghttp2-client): found on PATH (or --h2load); when missing, installed with apt-get
if running as root on Debian, else the script says how to install it.

    scripts/bench_api [--duration 8] [--concurrency 1,16] [--databases sqlite,postgresql]
                      [--workers 1,2] [--rounds 3] [--log-level INFO] [--no-log-off] [--post]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from urllib.parse import urlsplit

from . import harness, options
from .harness import (
    CLEANUP,
    CpuMeter,
    H2load,
    Result,
    Server,
    balancing_closes,
    bootstrap,
    connections_by_process,
    csv_ints,
    csv_words,
    fetch,
    find_tool,
    free_port,
    log,
    median,
    scratch_dir,
    scratch_postgres,
    service_env,
    settle_postgres,
    wait_ready,
)

STARLETTE, CONNEXION = "bare Starlette", "bare connexion"
API, LOG_OFF = "management API", "management API, access log off"
BARE_GET = "GET, the fixed envelope"
BARE_KEYS, BARE_PERMISSIONS = "GET /api-keys?limit=20, our document", "GET /permissions, our document"
GET_KEYS, GET_PERMISSIONS, POST_KEYS = "GET /api-keys?limit=20", "GET /permissions", "POST /api-keys"
# The share of bare connexion's req/s each of our operations must reach, and the tail it may have.
GOALS = {GET_KEYS: 0.5, GET_PERMISSIONS: 0.6}
# The bare connexion operation serving the same document as each of ours.
SAME_DOCUMENT = {GET_KEYS: BARE_KEYS, GET_PERMISSIONS: BARE_PERMISSIONS, POST_KEYS: BARE_GET}
TAIL_CONCURRENCY, TAIL_RATIO = 16, 3.0

ENVELOPE = {"success": True, "data": {"message": "OK", "result": {}}}
BARE_PATH = "/api/v2/api-keys?workspaceId=bench&limit=20"
ENVELOPE_PATH = "/api/v2/envelope?workspaceId=bench&limit=20"

STARLETTE_APP = f'''
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

BODY = {ENVELOPE!r}


async def endpoint(request):
    return JSONResponse(BODY)


app = Starlette(routes=[Route("/api/v2/api-keys", endpoint)])
'''

CONNEXION_APP = f'''
import json
from pathlib import Path

from connexion import AsyncApp

BODY = {ENVELOPE!r}
# What our GET /api-keys?limit=20 and GET /permissions answered, captured by the benchmark.
DOCUMENTS = json.loads((Path(__file__).resolve().parent / "bench_documents.json").read_text())


def envelope(workspaceId, limit=20):
    return BODY, 200


def list_api_keys(workspaceId, limit=20):
    return DOCUMENTS["keys"], 200


def list_permissions():
    return DOCUMENTS["permissions"], 200


def create_app():
    app = AsyncApp(__name__, specification_dir=str(Path(__file__).resolve().parent))
    app.add_api("bench_connexion.json", base_path="/api/v2", strict_validation=True)
    return app
'''

_LIST_PARAMETERS = [
    {"name": "workspaceId", "in": "query", "required": True, "schema": {"type": "string", "minLength": 1}},
    {"name": "limit", "in": "query", "required": False,
     "schema": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}},
]
_ENVELOPE_RESPONSE = {"200": {"description": "the envelope",
                              "content": {"application/json": {"schema": {"type": "object"}}}}}
CONNEXION_SPEC = {
    "openapi": "3.0.3",
    "info": {"title": "bare connexion", "version": "1"},
    "paths": {
        "/api-keys": {"get": {"operationId": "bench_connexion_app.list_api_keys", "parameters": _LIST_PARAMETERS,
                              "responses": _ENVELOPE_RESPONSE}},
        "/permissions": {"get": {"operationId": "bench_connexion_app.list_permissions",
                                 "responses": _ENVELOPE_RESPONSE}},
        "/envelope": {"get": {"operationId": "bench_connexion_app.envelope", "parameters": _LIST_PARAMETERS,
                              "responses": _ENVELOPE_RESPONSE}},
    },
}

# Answers every request on a keep-alive connection with the same bytes, parsing nothing but the end of
# the headers: as fast as a Python server gets, so what limits its rate is mostly the generator.
FIXED_SERVER = f'''
import asyncio
import sys

import uvloop

BODY = {json.dumps(ENVELOPE).encode()!r}
RESPONSE = (b"HTTP/1.1 200 OK\\r\\nContent-Type: application/json\\r\\nContent-Length: %d\\r\\n\\r\\n%s"
            % (len(BODY), BODY))


class Fixed(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport, self.pending = transport, b""

    def data_received(self, data):
        data = self.pending + data
        count = data.count(b"\\r\\n\\r\\n")
        self.pending = data[data.rfind(b"\\r\\n\\r\\n") + 4:] if count else data
        if count:
            self.transport.write(RESPONSE * count)


async def main(port):
    server = await asyncio.get_running_loop().create_server(Fixed, "127.0.0.1", port, backlog=1024)
    await server.serve_forever()


uvloop.run(main(int(sys.argv[1])))
'''


def parse_args(argv=None):
    parser = options.parser("bench_api", __doc__, options.load_cells("h2load", "connection inactivity timeout"),
                            options.workers([1, 2], "uvicorn processes of every target"), options.log_level(),
                            options.postgres())
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds per management-API cell, each right after a run of bare connexion serving "
                             "the same document; the cell reports the median (default 3)")
    parser.add_argument("--warmup", type=int, default=2,
                        help="unrecorded seconds of load after each server start, so that every worker "
                             "has imported and connected before any cell (default 2)")
    parser.add_argument("--concurrency", type=csv_ints, default=[1, 16],
                        help="connections, comma-separated (default 1,16)")
    parser.add_argument("--databases", type=csv_words, default=["sqlite", "postgresql"],
                        help="comma-separated from sqlite, postgresql (default both)")
    parser.add_argument("--no-log-off", action="store_true",
                        help="skip the rows of the API with LOG_LEVEL=WARNING (what the access log costs)")
    parser.add_argument("--post", action="store_true", help="also measure POST /api-keys (in a second workspace)")
    parser.add_argument("--seed-keys", type=int, default=200,
                        help="API keys created before the cells; GET /api-keys lists 20 of them (default 200)")
    args = parser.parse_args(argv)
    unknown = set(args.databases) - {"sqlite", "postgresql"}
    if unknown:
        parser.error(f"--databases: unknown {', '.join(sorted(unknown))}")
    if not args.concurrency or min(args.concurrency) < 1 or not args.workers or min(args.workers) < 1:
        parser.error("--concurrency and --workers need positive integers")
    if min(args.duration, args.cell_warmup, args.warmup, args.threads, args.timeout, args.rounds) < 1:
        parser.error("--duration, --cell-warmup, --warmup, --threads, --timeout and --rounds need whole numbers from 1")
    return args


# --- the load generator ---------------------------------------------------------------------------

def find_h2load(path: str | None) -> str:
    return find_tool(path, "h2load", "nghttp2-client", "--h2load",
                     "`brew install nghttp2` on macOS, or build it from https://github.com/nghttp2/nghttp2")


@dataclass
class Cell:
    target: str
    db: str
    workers: int
    operation: str
    concurrency: int
    result: Result
    server_cores: float  # the server's processes, over the run (its warm-up and measured time)
    other_cores: float  # everything but the server, h2load and this script: the machine's noise
    # Measured in rounds, each right after bare connexion serving the same document: the median of
    # the rounds' ratios, and each round's (bare req/s, this cell's req/s).
    paired_ratio: float | None = None
    rounds: list[tuple[float, float]] = field(default_factory=list)
    splits: list[list[int]] = field(default_factory=list)  # each run's connections per worker
    # Each run's connections the workers closed to balance them (the API's own count, from /metrics).
    closes: list[int] = field(default_factory=list)


@dataclass
class Bench:
    args: argparse.Namespace
    load: H2load
    cells: list[Cell] = field(default_factory=list)
    ceiling: list[Cell] = field(default_factory=list)

    def measure(self, server: Server, target, db, workers, operation, url, headers, body=None, *,
                into=None, best_of: int = 1, paired: str | None = None, api: str | None = None) -> None:
        """One cell per concurrency: the best of ``best_of`` runs or, with ``paired`` (the URL of bare
        connexion serving the same document, its server running), ``--rounds`` rounds of a bare run
        then ours, reported as the round of median req/s and the median of the rounds' ratios: the
        shared machine's drift between the two then cancels out of the ratio. ``api``: the management
        API's base URL, whose /metrics is read around each run for the connections its workers closed
        to keep them spread."""
        warmup = self.args.cell_warmup
        for concurrency in self.args.concurrency:
            runs, rounds, splits, closes = [], [], [], []
            for _ in range(self.args.rounds if paired else best_of):
                if paired:
                    bare = self.load.run(paired, concurrency, self.args.duration, {}, warmup=warmup)
                meter = CpuMeter(server.group())
                # Sampled in the middle of the measured seconds: the connections each worker holds.
                split = threading.Timer(warmup + self.args.duration / 2, lambda: splits.append(
                    connections_by_process(server.group(), urlsplit(url).port)))
                split.start()
                closed = balancing_closes(api) if api and workers > 1 else None
                r = self.load.run(url, concurrency, self.args.duration, headers, body, warmup=warmup)
                split.join()
                if closed is not None:
                    closes.append(balancing_closes(api) - closed)
                runs.append((r.rps, r, meter.cores()))
                if paired:
                    rounds.append((bare.rps, r.rps))
            if paired:
                _, r, cores = sorted(runs, key=lambda run: run[0])[len(runs) // 2]
            else:
                _, r, cores = max(runs, key=lambda run: run[0])
            cell = Cell(target, db, workers, operation, concurrency, r, *cores,
                        paired_ratio=median([ours / base for base, ours in rounds if base]) if rounds else None,
                        rounds=rounds, splits=splits, closes=closes)
            (self.cells if into is None else into).append(cell)
            log(f"  {target:30} {db:10} w={workers} {operation:38} c={concurrency:<3} {r.rps:9.1f} req/s  "
                f"p50 {r.p50_ms:7.2f} ms  p99 {r.p99_ms:7.2f} ms  cores: h2load {r.generator_cores:.2f}, "
                f"server {cell.server_cores:.2f}, elsewhere {cell.other_cores:.2f}"
                + (f"  errors {r.errors}" if r.errors else "")
                + (f"  × paired bare connexion: {cell.paired_ratio:.2f} (rounds, bare/ours req/s: "
                   + ", ".join(f"{b:.0f}/{o:.0f}" for b, o in rounds) + ")" if rounds else "")
                + (f"  connections per worker: {' / '.join(map(str, splits))}" if workers > 1 else "")
                + (f"  closed to balance: {' / '.join(map(str, closes))}" if closes else ""))

    def warm(self, url, headers) -> None:
        self.load.run(url, max(self.args.concurrency), self.args.warmup, headers)


# --- targets --------------------------------------------------------------------------------------

def start(command: list[str], env: dict[str, str], log_path: Path, ready_url: str, headers=None) -> Server:
    server = Server(command, env, log_path)
    wait_ready(server, ready_url, headers)
    return server


def bench_ceiling(bench: Bench) -> None:
    with CLEANUP.scope():
        work = scratch_dir("bench_api_ceiling_")
        (work / "fixed_server.py").write_text(FIXED_SERVER)
        port = free_port()
        url = f"http://127.0.0.1:{port}{BARE_PATH}"
        server = start([sys.executable, str(work / "fixed_server.py"), str(port)], dict(os.environ),
                       work / "server.log", url)
        bench.warm(url, {})
        # A capacity: whatever else runs on the machine can only lower it, so the best of three runs.
        bench.measure(server, "generator ceiling", "-", 1, "GET, fixed bytes", url, {}, into=bench.ceiling, best_of=3)


@contextlib.contextmanager
def bare_targets(bench: Bench, workers: int, documents: dict):
    """Measures the bare targets, then keeps bare connexion running: yields, by our operation, the
    URL where it serves the same document, for the paired rounds of the management API's cells."""
    with CLEANUP.scope():
        work = scratch_dir(f"bench_api_bare_{workers}w_")
        (work / "bench_starlette_app.py").write_text(STARLETTE_APP)
        (work / "bench_connexion_app.py").write_text(CONNEXION_APP)
        (work / "bench_connexion.json").write_text(json.dumps(CONNEXION_SPEC, indent=1))
        (work / "bench_documents.json").write_text(json.dumps(documents))
        operations = {STARLETTE: [(BARE_GET, BARE_PATH)],
                      CONNEXION: [(BARE_KEYS, BARE_PATH), (BARE_PERMISSIONS, "/api/v2/permissions"),
                                  (BARE_GET, ENVELOPE_PATH)]}
        for target, app in ((STARLETTE, ["bench_starlette_app:app"]),
                            (CONNEXION, ["bench_connexion_app:create_app", "--factory"])):
            with CLEANUP.scope():
                port = free_port()
                base = f"http://127.0.0.1:{port}"
                # The loop and HTTP implementation are uvicorn's defaults, as for `python -m api.serve`.
                command = [sys.executable, "-m", "uvicorn", *app, "--app-dir", str(work), "--host", "127.0.0.1",
                           "--port", str(port), "--workers", str(workers), "--no-access-log", "--log-level", "warning"]
                server = start(command, dict(os.environ, PYTHONUNBUFFERED="1"), work / f"{target.split()[-1]}.log",
                               base + BARE_PATH)
                bench.warm(base + BARE_PATH, {})
                for operation, path in operations[target]:
                    bench.measure(server, target, "-", workers, operation, base + path, {})
                if target == CONNEXION:
                    by_document = {bare: base + path for bare, path in operations[CONNEXION]}
                    yield {ours: by_document[bare] for ours, bare in SAME_DOCUMENT.items()}


def capture_documents(bench: Bench) -> dict:
    """What our GET /api-keys?limit=20 and GET /permissions answer, on SQLite seeded as the cells
    are: the documents the bare connexion app serves."""
    with CLEANUP.scope():
        data_dir = scratch_dir("bench_api_documents_")
        env = service_env(WORKERS=1, DATA_DIR=data_dir, STT_ENABLED="false", LOG_LEVEL="WARNING")
        owner = bootstrap(env)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        headers = {"Authorization": f"Bearer {owner['token']}"}
        start([sys.executable, "-m", "api.serve"], dict(env, API_PORT=str(port)), data_dir / "server.log",
              f"{base}/api/v2/permissions", headers)
        seed_keys(base, owner, bench.args.seed_keys)
        documents = {}
        for name, path in (("keys", f"/api/v2/api-keys?workspaceId={owner['workspaceId']}&limit=20"),
                           ("permissions", "/api/v2/permissions")):
            status, body = fetch(base + path, headers=headers)
            if status != 200:
                raise RuntimeError(f"capturing GET {path}: {status} {body[:300]!r}")
            documents[name] = json.loads(body)
        return documents


def seed_keys(base: str, owner: dict, count: int) -> None:
    headers = {"Authorization": f"Bearer {owner['token']}"}
    url = f"{base}/api/v2/api-keys?workspaceId={owner['workspaceId']}"
    for n in range(count):
        status, body = fetch(url, method="POST", headers=headers,
                             json_body={"name": f"bench key {n}", "userId": owner["userId"]})
        if not 200 <= status < 300:
            raise RuntimeError(f"seeding API keys: POST answered {status}: {body[:500]!r}")
    status, body = fetch(f"{url}&limit=20", headers=headers)
    total = json.loads(body)["data"]["result"]["pagination"]["total"] if status == 200 else None
    if total != count:
        raise RuntimeError(f"after seeding {count} keys the list answers {status} with total {total}")


def bench_api(bench: Bench, db: str, workers: int, paired: dict[str, str]) -> None:
    args = bench.args
    with CLEANUP.scope():
        data_dir = scratch_dir(f"bench_api_{db}_{workers}w_")
        database_url = (scratch_postgres(args.postgres_url, f"bench_api_{os.getpid()}_{workers}w")
                        if db == "postgresql" else None)
        env = service_env(WORKERS=workers, DATA_DIR=data_dir, DATABASE_URL=database_url, STT_ENABLED="false")
        owner = bootstrap(env)
        # POSTs go to a workspace of their own, so the list the GETs read stays at --seed-keys keys.
        poster = bootstrap(env, "Bench POST", "bench-post@example.com") if args.post else None
        runs = [(API, args.log_level)]
        if not args.no_log_off and args.log_level.upper() in ("DEBUG", "INFO"):
            runs.append((LOG_OFF, "WARNING"))
        for n, (target, level) in enumerate(runs):
            with CLEANUP.scope():
                port = free_port()
                base = f"http://127.0.0.1:{port}"
                headers = {"Authorization": f"Bearer {owner['token']}"}
                server = start([sys.executable, "-m", "api.serve"], dict(env, API_PORT=str(port), LOG_LEVEL=level),
                               data_dir / f"server_{level}.log", f"{base}/api/v2/permissions", headers)
                if n == 0:
                    seed_keys(base, owner, args.seed_keys)
                    if database_url:
                        settle_postgres(database_url)
                list_url = f"{base}/api/v2/api-keys?workspaceId={owner['workspaceId']}&limit=20"
                bench.warm(list_url, headers)
                first = len(bench.cells)
                # The API's own rows are paired with bare connexion; the access-log-off rows, compared
                # with those, are not.
                pair = paired if target == API else {}
                bench.measure(server, target, db, workers, GET_KEYS, list_url, headers, paired=pair.get(GET_KEYS),
                              api=base)
                bench.measure(server, target, db, workers, GET_PERMISSIONS, f"{base}/api/v2/permissions", headers,
                              paired=pair.get(GET_PERMISSIONS), api=base)
                if poster:
                    bench.measure(server, target, db, workers, POST_KEYS,
                                  f"{base}/api/v2/api-keys?workspaceId={poster['workspaceId']}",
                                  {"Authorization": f"Bearer {poster['token']}"},
                                  {"name": "bench key", "userId": poster["userId"]})
                if any(c.result.errors for c in bench.cells[first:]):
                    log(server.tail(40, skip=" api.access "))
                server.check_alive()


# --- output ---------------------------------------------------------------------------------------

def ratio(cell: Cell, bare: dict, target: str, operation: str = BARE_GET) -> float:
    base = bare.get((target, operation, cell.workers, cell.concurrency))
    return cell.result.rps / base.result.rps if base and base.result.rps else float("nan")


def same_document(cell: Cell, bare: dict) -> float:
    """The cell's req/s over bare connexion's serving the same document: the goal's ratio (the
    median of its paired rounds, when it was measured in rounds)."""
    if cell.paired_ratio is not None:
        return cell.paired_ratio
    return ratio(cell, bare, CONNEXION, SAME_DOCUMENT.get(cell.operation, BARE_GET))


def goal(cell: Cell, bare: dict) -> str:
    need = GOALS.get(cell.operation)
    if cell.target != API or need is None:
        return "–"
    misses = []
    if not same_document(cell, bare) >= need:
        misses.append(f"< {need:g} × bare connexion")
    if cell.concurrency >= TAIL_CONCURRENCY and not cell.result.p99_ms <= TAIL_RATIO * cell.result.p50_ms:
        misses.append(f"p99 > {TAIL_RATIO:g} × p50")
    return "met" if not misses else "**missed**: " + ", ".join(misses)


def table(cells: list[Cell], bare: dict) -> str:
    lines = ["| target | db | workers | operation | concurrency | req/s | p50 ms | p99 ms | p99/p50 | "
             "× bare connexion, same document | × bare connexion, fixed envelope | × bare Starlette, fixed "
             "envelope | goal |",
             "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for c in cells:
        r = c.result
        lines.append(f"| {c.target} | {c.db} | {c.workers} | {c.operation} | {c.concurrency} | {r.rps:.0f} | "
                     f"{r.p50_ms:.2f} | {r.p99_ms:.2f} | {r.p99_ms / r.p50_ms if r.p50_ms else math.nan:.1f} | "
                     f"{same_document(c, bare):.2f} | {ratio(c, bare, CONNEXION):.2f} | "
                     f"{ratio(c, bare, STARLETTE):.2f} | {goal(c, bare)} |")
    return "\n".join(lines)


def report(bench: Bench, command: str, wall: float) -> None:
    args, cells = bench.args, bench.cells
    bare = {(c.target, c.operation, c.workers, c.concurrency): c for c in cells if c.target in (STARLETTE, CONNEXION)}
    print(table(cells, bare))
    print()
    judged = [c for c in cells if goal(c, bare) != "–"]
    missed = [c for c in judged if goal(c, bare) != "met"]
    print(f"Goal (LOG_LEVEL={args.log_level}: GET /api-keys ≥ {GOALS[GET_KEYS]:g} × and GET /permissions ≥ "
          f"{GOALS[GET_PERMISSIONS]:g} × the req/s of bare connexion serving the same document at the same "
          f"workers and concurrency, and p99 ≤ "
          f"{TAIL_RATIO:g} × p50 at concurrency ≥ {TAIL_CONCURRENCY}): "
          + (f"met in all {len(judged)} cells." if not missed else
             f"met in {len(judged) - len(missed)} of {len(judged)} cells; missed in "
             + "; ".join(f"{c.db} w={c.workers} {c.operation} c={c.concurrency}" for c in missed) + "."))
    print()

    def fastest(concurrency: int, targets) -> float:
        return max((c.result.rps for c in cells if c.concurrency == concurrency and c.target in targets), default=0.0)

    for c in bench.ceiling:
        real, bare_top = fastest(c.concurrency, (CONNEXION, API, LOG_OFF)), fastest(c.concurrency, (STARLETTE,))
        print(f"Generator ceiling at concurrency {c.concurrency}: {c.result.rps:.0f} req/s (best of 3 runs of h2load "
              f"-t {bench.load.threads(c.concurrency)} -c {c.concurrency} against a one-process uvloop server "
              f"answering fixed bytes, h2load using {c.result.generator_cores:.2f} cores): "
              + (f"{c.result.rps / real:.0f} × the fastest of bare connexion and the management API "
                 f"({real:.0f} req/s)" if real else "no connexion or API cell")
              + (f", {c.result.rps / bare_top:.1f} × bare Starlette ({bare_top:.0f} req/s)." if bare_top else "."))
    for c in bench.ceiling:
        close = sorted({t.target for t in cells if t.concurrency == c.concurrency and 3 * t.result.rps > c.result.rps})
        if close:
            print(f"Warning: at concurrency {c.concurrency} the ceiling is less than 3 × the rate of "
                  f"{', '.join(close)}: the generator may cap it there.")
    print()
    print(f"Command: `{command}`")
    print()
    tool = subprocess.run([bench.load.binary, "--version"], capture_output=True, text=True).stdout.splitlines()
    print(f"- Load generator: {(tool or ['h2load'])[0].strip()} (`{bench.load.binary}`, --h1), the same for every "
          f"target; closed loop over `concurrency` keep-alive HTTP/1.1 connections, {args.cell_warmup} s "
          f"unrecorded then {args.duration} s measured per cell on the same connections (made while unrecorded, "
          "see the script's help). req/s = requests completed / measured time; p50 and p99 over h2load's log "
          "of every measured request (start of send to end of response, 1 µs resolution). "
          + ("One h2load thread (-t 1): its ceiling (above) is many times the fastest target's rate, and a second "
             f"thread would only take more CPU from the servers, which want every one of the {os.cpu_count()} "
             "cores; " if args.threads == 1 else f"Up to {args.threads} h2load threads, at most one per connection; ")
          + "h2load's CPU, the server's and the rest of the machine's per cell are on stderr.")
    print(f"- Pairing: each management-API cell (the access-log-off rows aside) is measured in {args.rounds} "
          "rounds, each right after a run of bare connexion serving the same document at the same workers and "
          "concurrency (that server kept running meanwhile). The row shows the round of median req/s, and its "
          "'same document' ratio is the median of the rounds' ratios, so the shared machine's drift between "
          "measurements minutes apart does not enter the goal's ratio; the bare rows and the other ratio "
          "columns are single runs. Each round's figures are on stderr.")
    print("- bare Starlette: one route answering the fixed envelope with JSONResponse; bare connexion: AsyncApp, "
          "an OpenAPI 3.0 spec of three GETs, strict_validation=True, no security, plain `def` handlers returning "
          "(document, 200): /api-keys (required query workspaceId: string, minLength 1; optional limit: integer "
          "1..100, default 20) the document our GET /api-keys?limit=20 answered, /permissions the document our "
          "GET /permissions answered (both captured from our API on SQLite seeded as for the cells), /envelope "
          "(the parameters of /api-keys) the fixed envelope. Both served by `python -m uvicorn ... --workers N --no-access-log` (connexion as a "
          "factory, as `python -m api.serve` serves ours), uvicorn's default loop and HTTP implementation.")
    print(f"- management API: `python -m api.serve` with WORKERS=N, STT_ENABLED=false, RATE_LIMITS_ENABLED=true, "
          f"DEFAULT_REQUESTS_PER_MINUTE=DEFAULT_REQUESTS_PER_DAY={harness.UNLIMITED} (the limiter writes to the "
          f"database on every request and never refuses), LOG_LEVEL={args.log_level}; SQLite in a temporary "
          "DATA_DIR or DATABASE_URL on a scratch PostgreSQL database, both removed afterwards. Token and workspace "
          f"from `python -m api.admin bootstrap`; {args.seed_keys} API keys created with POST before the cells; GET "
          f"/api-keys?workspaceId=W&limit=20 and GET /permissions with `Authorization: Bearer <token>`."
          + (" POST /api-keys cells write to a second bootstrapped workspace, so the list stays the same; their "
             "ratio columns compare with the bare GET." if args.post else ""))
    pairs = [(c, o) for c in cells if c.target == API for o in cells
             if o.target == LOG_OFF and (o.db, o.workers, o.operation, o.concurrency)
             == (c.db, c.workers, c.operation, c.concurrency) and o.result.rps]
    if pairs:
        costs = [100 * (1 - c.result.rps / o.result.rps) for c, o in pairs]
        print(f"- Access log: the '{LOG_OFF}' rows are the same server and data restarted with LOG_LEVEL=WARNING "
              f"(no access-log line). Logging at {args.log_level} costs {median(costs):.0f} % of req/s "
              f"(median over {len(pairs)} cells, from {min(costs):.0f} % to {max(costs):.0f} %).")
    print(f"- All servers on 127.0.0.1 sharing {os.cpu_count()} cores with h2load; connexion {version('connexion')}, "
          f"Starlette {version('starlette')}, uvicorn {version('uvicorn')}; Python {platform.python_version()}, "
          f"{platform.platform()}. Total wall time {wall:.0f} s.")
    busiest = max(cells, key=lambda c: c.other_cores, default=None)
    if busiest:
        print(f"- Machine noise: processes other than the servers, h2load and this script (and time the hypervisor "
              f"gave elsewhere) kept {sum(c.other_cores for c in cells) / len(cells):.2f} cores busy on average "
              f"during the measured cells, {busiest.other_cores:.2f} at most ({busiest.target} {busiest.db} "
              f"w={busiest.workers} {busiest.operation} c={busiest.concurrency}); per-cell cores are on stderr.")
    split = [c for c in cells if c.target == API and c.workers > 1 and c.concurrency > 1]
    if split:
        print("- Connections per worker, sampled in the middle of each measured run (workers share one "
              "listening socket and keep each connection where it was accepted until it closes: a worker left "
              "without any halves a round's rate, an uneven split lengthens its tail), and the connections the workers "
              "closed in the run to keep them spread (api/connection_balance.py): "
              + "; ".join(f"{c.db} w={c.workers} {c.operation} c={c.concurrency}: "
                          + " / ".join(f"{s} ({n} closed)" for s, n in zip(c.splits, c.closes))
                          for c in split) + ".")
    for c in bench.ceiling + cells:
        if c.result.errors:
            print(f"- Errors in {c.target} {c.db} w={c.workers} {c.operation} c={c.concurrency}: {c.result.errors}")


def main(argv=None) -> int:
    args = parse_args(argv)
    command = shlex.join(sys.orig_argv)
    started = time.monotonic()
    with CLEANUP.guard():
        bench = Bench(args, H2load(find_h2load(args.h2load), args.threads, args.timeout,
                                   scratch_dir("bench_api_h2load_")))
        log("generator ceiling")
        bench_ceiling(bench)
        log("the documents our operations answer")
        documents = capture_documents(bench)
        for workers in args.workers:
            log(f"bare targets, workers={workers}")
            with bare_targets(bench, workers, documents) as paired:
                for db in args.databases:
                    log(f"management API, {db}, workers={workers}")
                    bench_api(bench, db, workers, paired)
    report(bench, command, time.monotonic() - started)
    return 1 if any(c.result.errors for c in bench.ceiling + bench.cells) else 0


if __name__ == "__main__":
    sys.exit(main())
