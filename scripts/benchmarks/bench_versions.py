"""The version history of one agent under load (issue 11's benchmark): reading a page of an agent
with 10,000 versions, near its newest and near its oldest end, and saving new versions of one
agent from several clients at once.

For each database (--databases, default postgresql; sqlite as well on request):

  server    `python -m api.serve` with WORKERS=--workers (default 2), STT_ENABLED=false,
            LOG_LEVEL=--log-level (default INFO, the service default: one access-log line per
            request), on a scratch PostgreSQL database made on the server of --postgres-url (default
            postgresql://postgres@127.0.0.1:5432/test) and dropped afterwards, or on SQLite in a
            temporary DATA_DIR. Rate limiting as bench_api runs it: RATE_LIMITS_ENABLED=true with
            DEFAULT_REQUESTS_PER_MINUTE=DEFAULT_REQUESTS_PER_DAY=1000000000 (the limiter does its
            per-request write and never answers 429); --rate-limits-off sets RATE_LIMITS_ENABLED=false
  seed      a workspace and token from `python -m api.admin bootstrap`; one agent made with POST
            /api/v2/agents (version 1, published), then versions 2..--versions (default 10,000)
            inserted in one transaction, in process, as rows the domain would have written: each
            with its own prompt, its number, its parent the one before, its diff summary against it
            (models.configs.diff), then the agent's counter and head moved to the last. The API then
            must answer total = --versions and headVersionNumber = --versions. On PostgreSQL,
            VACUUM ANALYZE afterwards (a table's state once autovacuum has seen it)
  reads     GET /api/v2/versions/agent/{id}?workspaceId=W&limit=100&offset=0 and &offset=9900 (the
            last full page), at each --concurrency (default 1,16)
  saves     PATCH /api/v2/agents/{id} with {"config": {"prompt": <distinct>}} at --save-concurrency
            (default 8): wrk's request() numbers every request, so each saves a configuration unlike
            the head's and makes a version. saves/s = saves answered 200 per measured second, each
            a version: the agent's version count before and after the run must agree (up to the
            requests cut off at the run's end). Then the agent's numbers
            are checked in the database: exactly 1..N, N its counter, the main line one parent chain
            ending at the head

Each cell: --cell-warmup seconds of the same load unrecorded, then --duration seconds measured;
wrk's closed loop over `concurrency` keep-alive connections; p50/p99 from wrk's histogram of every
request (the harness's Lua done() hook for wrk). Goal (issue 11): p99 <= 25 ms at concurrency 16 on
PostgreSQL for both reads. Markdown table on stdout, progress on stderr; exit status 1 when a cell
saw an error answer or a socket error, or the numbers have a gap or a duplicate.

wrk: on PATH or --wrk; installed with apt-get when missing and running as root (the harness's finder).

    scripts/bench_versions [--duration 8] [--databases postgresql,sqlite] [--workers 2]
                           [--concurrency 1,16] [--save-concurrency 8] [--versions 10000]
                           [--log-level INFO] [--rate-limits-off] [--postgres-url URL]
"""
from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from . import options
from .harness import (
    CLEANUP,
    UNLIMITED,
    WRK_DONE_LUA,
    CpuMeter,
    Result,
    Server,
    Wrk,
    bootstrap,
    csv_ints,
    csv_words,
    fetch,
    find_wrk,
    free_port,
    log,
    scratch_dir,
    scratch_postgres,
    service_env,
    settle_postgres,
    wait_ready,
)

GOAL_P99_MS, GOAL_CONCURRENCY, GOAL_DB = 25.0, 16, "postgresql"
PAGE = 100

# Every request a PATCH saving a prompt no other request saves: BENCH_TAG (one per wrk run), the
# wrk thread, and this thread's count of its requests.
SAVE_LUA = r'''
local tag = os.getenv("BENCH_TAG") or "run"
local threads = 0
local count = 0

function setup(thread)
  threads = threads + 1
  thread:set("thread_number", threads)
end

function init(args)
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  count = count + 1
  local body = string.format('{"config": {"prompt": "Benchmark save %s-%d-%d."}}', tag, thread_number or 0, count)
  return wrk.format("PATCH", nil, nil, body)
end
''' + WRK_DONE_LUA


def parse_args(argv=None):
    parser = options.parser("bench_versions", __doc__, options.load_cells(), options.log_level(), options.postgres())
    parser.add_argument("--warmup", type=int, default=2,
                        help="unrecorded seconds of reads after the server starts (default 2)")
    parser.add_argument("--concurrency", type=csv_ints, default=[1, 16],
                        help="connections of the read cells, comma-separated (default 1,16)")
    parser.add_argument("--save-concurrency", type=int, default=8, help="connections saving (default 8)")
    parser.add_argument("--databases", type=csv_words, default=["postgresql"],
                        help="comma-separated from postgresql, sqlite (default postgresql)")
    parser.add_argument("--workers", type=int, default=2, help="API processes (WORKERS, default 2)")
    parser.add_argument("--versions", type=int, default=10_000, help="versions of the agent read (default 10000)")
    parser.add_argument("--rate-limits-off", action="store_true",
                        help="RATE_LIMITS_ENABLED=false (default: on, with limits never reached)")
    args = parser.parse_args(argv)
    unknown = set(args.databases) - {"sqlite", "postgresql"}
    if unknown:
        parser.error(f"--databases: unknown {', '.join(sorted(unknown))}")
    if not args.concurrency or min(args.concurrency + [args.save_concurrency, args.workers]) < 1:
        parser.error("--concurrency, --save-concurrency and --workers need positive integers")
    if min(args.duration, args.cell_warmup, args.warmup, args.threads, args.timeout) < 1:
        parser.error("--duration, --cell-warmup, --warmup, --threads and --timeout need whole numbers from 1")
    if args.versions < PAGE:
        parser.error(f"--versions must be at least {PAGE}")
    return args


@dataclass
class Cell:
    db: str
    operation: str
    concurrency: int
    result: Result
    server_cores: float
    other_cores: float
    saves_per_s: float | None = None


def measure(wrk: Wrk, server: Server, args, db: str, operation: str, url: str, headers: dict, concurrency: int,
            on_measured=None) -> Cell:
    """One cell: the unrecorded warm-up, then the measured run (``on_measured`` wraps it)."""
    os.environ["BENCH_TAG"] = f"warm{time.monotonic_ns()}"
    wrk.run(url, concurrency, args.cell_warmup, headers)
    os.environ["BENCH_TAG"] = f"run{time.monotonic_ns()}"
    meter = CpuMeter(server.group())
    result = wrk.run(url, concurrency, args.duration, headers)
    cell = Cell(db, operation, concurrency, result, *meter.cores())
    log(f"  {db:10} {operation:44} c={concurrency:<3} {result.rps:8.1f} req/s  p50 {result.p50_ms:7.2f} ms  "
        f"p99 {result.p99_ms:7.2f} ms  cores: wrk {result.generator_cores:.2f}, server {cell.server_cores:.2f}, "
        f"elsewhere {cell.other_cores:.2f}" + (f"  errors {result.errors}" if result.errors else ""))
    return cell


# --- the database, from this process ------------------------------------------------------------------

def open_models(database_url: str | None, data_dir: Path):
    from models.kernel.db import open_database
    return open_database(database_url, data_dir, pool_size=2)


def close_models() -> None:
    from models.kernel.db import database
    database.close()
    if hasattr(database.obj, "close_all"):
        database.close_all()


def seed_versions(workspace_id: str, user_id: str, agent_id: str, count: int) -> float:
    """Versions 2..count of the agent, as models.configs.entities.update would have written them one by
    one (each a new prompt after the one before), in one transaction; the seconds it took."""
    from models.configs import diff, schemas, versioning
    from models.configs.tables import Agent, Version
    from models.kernel.db import new_id, session, utcnow

    started = time.monotonic()
    with session(), versioning.writing():
        locked = versioning.lock(Agent, workspace_id, agent_id)
        if locked.version_count != 1:
            raise RuntimeError(f"the new agent has {locked.version_count} versions, not 1")
        parent_id = locked.head_version_id
        parent_config = versioning.config_of(workspace_id, parent_id)
        at = utcnow() - timedelta(seconds=count)
        rows = []
        for number in range(2, count + 1):
            config = schemas.complete(Agent.KIND, {"prompt": f"Seeded prompt number {number}."})
            version_id = new_id()
            rows.append({
                "id": version_id, "workspace": workspace_id, "entity_type": Agent.KIND, "entity_id": agent_id,
                "version_number": number, "parent_version_id": parent_id, "branch_id": None,
                "name": f"Version {number}", "config": config,
                "config_diff_summary": diff.summary(diff.diff(parent_config, config)),
                "created_by": user_id, "created_at": at + timedelta(seconds=number), "is_published": False,
                "published_at": None, "published_by": None,
            })
            parent_id, parent_config = version_id, config
            if len(rows) == 1000:
                Version.insert_many(rows).execute()
                rows = []
        if rows:
            Version.insert_many(rows).execute()
        Agent.update(version_count=count, head_version_id=parent_id, updated_at=utcnow()).where(
            Agent.id == agent_id).execute()
    return time.monotonic() - started


def check_numbering(agent_id: str) -> tuple[bool, str]:
    """(ok, what was found): versions 1..N exactly, N the agent's counter, the main line one chain
    from version 1 to the head."""
    from models.configs.tables import Agent, Version
    from models.kernel.db import session

    with session():
        rows = list(Version.select(Version.id, Version.version_number, Version.parent_version_id, Version.branch_id)
                    .where((Version.entity_type == Agent.KIND) & (Version.entity_id == agent_id))
                    .order_by(Version.version_number).tuples())
        agent = Agent.get_by_id(agent_id)
    numbers = [row[1] for row in rows]
    n = agent.version_count
    problems = []
    if numbers != list(range(1, n + 1)):
        seen = set(numbers)
        duplicates = len(numbers) - len(seen)
        missing = [k for k in range(1, n + 1) if k not in seen]
        problems.append(f"{len(numbers)} versions for counter {n}: {duplicates} duplicates, {len(missing)} missing "
                        f"(first {missing[:5]})")
    main = [(vid, parent) for vid, _, parent, branch in rows if branch is None]
    breaks = sum(1 for i in range(1, len(main)) if main[i][1] != main[i - 1][0])
    if breaks or not main or main[0][1] is not None:
        problems.append(f"the main line's parent chain breaks {breaks} times")
    if main and agent.head_version_id != main[-1][0]:
        problems.append("the head is not the newest main-line version")
    if problems:
        return False, "; ".join(problems)
    return True, f"versions 1..{n}, no gap, no duplicate, one parent chain ending at the head"


# --- one database ----------------------------------------------------------------------------------------

def api_json(url: str, headers: dict, method: str = "GET", body=None) -> dict:
    status, data = fetch(url, method=method, headers=headers, json_body=body)
    if status != 200:
        raise RuntimeError(f"{method} {url}: {status} {data[:500]!r}")
    return json.loads(data)["data"]["result"]


@dataclass
class Outcome:
    cells: list[Cell]
    seed_s: float
    numbering_ok: bool
    numbering: str
    saves_before: int
    saves_after: int


def bench_database(args, get_wrk: Wrk, save_wrk: Wrk, db: str) -> Outcome:
    with CLEANUP.scope():
        data_dir = scratch_dir(f"bench_versions_{db}_")
        database_url = (scratch_postgres(args.postgres_url, f"bench_versions_{os.getpid()}")
                        if db == "postgresql" else None)
        limits = {"RATE_LIMITS_ENABLED": "false"} if args.rate_limits_off else {}
        env = service_env(WORKERS=args.workers, DATA_DIR=data_dir, DATABASE_URL=database_url, STT_ENABLED="false",
                          LOG_LEVEL=args.log_level, **limits)
        owner = bootstrap(env)
        port = free_port()
        base = f"http://127.0.0.1:{port}/api/v2"
        headers = {"Authorization": f"Bearer {owner['token']}"}
        server = Server([sys.executable, "-m", "api.serve"], dict(env, API_PORT=str(port)), data_dir / "server.log")
        wait_ready(server, f"{base}/permissions", headers)
        ws = owner["workspaceId"]

        agent = api_json(f"{base}/agents?workspaceId={ws}", headers, "POST", {"name": "Benchmark agent"})["agent"]
        open_models(database_url, data_dir)
        CLEANUP.push(close_models)
        log(f"{db}: seeding versions 2..{args.versions} of agent {agent['id']}")
        seed_s = seed_versions(ws, owner["userId"], agent["id"], args.versions)
        listed = api_json(f"{base}/versions/agent/{agent['id']}?workspaceId={ws}&limit=1", headers)
        head = api_json(f"{base}/agents/{agent['id']}?workspaceId={ws}", headers)["agent"]["headVersionNumber"]
        if (listed["total"], listed["versions"][0]["versionNumber"], head) != (args.versions,) * 3:
            raise RuntimeError(f"after seeding: total {listed['total']}, newest {listed['versions'][0]['versionNumber']}, "
                               f"head {head}; expected {args.versions}")
        if database_url:
            settle_postgres(database_url)

        list_url = f"{base}/versions/agent/{agent['id']}?workspaceId={ws}&limit={PAGE}"
        get_wrk.run(f"{list_url}&offset=0", max(args.concurrency), args.warmup, headers)
        cells = []
        last_page = args.versions - PAGE
        for offset in (0, last_page):
            url = f"{list_url}&offset={offset}"
            page = api_json(url, headers)
            if [v["versionNumber"] for v in page["versions"]] != list(range(args.versions - offset, last_page - offset, -1)):
                raise RuntimeError(f"offset {offset} does not list the expected versions")
            for concurrency in args.concurrency:
                cells.append(measure(get_wrk, server, args, db, f"GET /versions limit={PAGE} offset={offset}", url,
                                     headers, concurrency))

        patch_url = f"{base}/agents/{agent['id']}?workspaceId={ws}"

        def newest() -> int:
            # A request wrk abandoned at the end of its run may still be committing: let it finish.
            time.sleep(0.5)
            return api_json(f"{base}/versions/agent/{agent['id']}?workspaceId={ws}&limit=1", headers)["total"]

        # The warm-up saves too; the measured run's versions are counted from where it left the agent.
        os.environ["BENCH_TAG"] = f"warm{time.monotonic_ns()}"
        save_wrk.run(patch_url, args.save_concurrency, args.cell_warmup, headers)
        before = newest()
        os.environ["BENCH_TAG"] = f"run{time.monotonic_ns()}"
        meter = CpuMeter(server.group())
        result = save_wrk.run(patch_url, args.save_concurrency, args.duration, headers)
        cores = meter.cores()
        after = newest()
        answered = result.requests - result.errors.get("non-2xx", 0)
        # Every 200 made a version; up to one request per connection was cut off by the run's end
        # and may have made one that no answer counts.
        if not answered <= after - before <= answered + args.save_concurrency:
            raise RuntimeError(f"{answered} saves answered 200 but the agent went from version {before} to {after}")
        saves = Cell(db, "PATCH /agents/{id} (a new version each)", args.save_concurrency, result, *cores,
                     saves_per_s=answered / result.seconds if result.seconds else 0.0)
        log(f"  {db:10} {saves.operation:44} c={saves.concurrency:<3} {result.rps:8.1f} req/s  "
            f"{saves.saves_per_s:8.1f} versions/s  p50 {result.p50_ms:7.2f} ms  p99 {result.p99_ms:7.2f} ms"
            + (f"  errors {result.errors}" if result.errors else ""))
        cells.append(saves)
        numbering_ok, numbering = check_numbering(agent["id"])
        log(f"  {db}: {numbering}")
        if any(c.result.errors for c in cells):
            log(server.tail(40, skip=" api.access "))
        server.check_alive()
        return Outcome(cells, seed_s, numbering_ok, numbering, before, after)


# --- output ------------------------------------------------------------------------------------------------

def goal(cell: Cell) -> str:
    if cell.db != GOAL_DB or cell.concurrency != GOAL_CONCURRENCY or cell.saves_per_s is not None:
        return "–"
    return "met" if cell.result.p99_ms <= GOAL_P99_MS else f"**missed** (p99 > {GOAL_P99_MS:g} ms)"


def report(args, outcomes: dict[str, Outcome], wrk_binary: str, command: str, wall: float) -> None:
    print("| db | workers | operation | concurrency | req/s | saves/s | p50 ms | p99 ms | goal |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---|")
    for outcome in outcomes.values():
        for c in outcome.cells:
            r = c.result
            saves = f"{c.saves_per_s:.0f}" if c.saves_per_s is not None else "–"
            print(f"| {c.db} | {args.workers} | {c.operation} | {c.concurrency} | {r.rps:.0f} | {saves} | "
                  f"{r.p50_ms:.2f} | {r.p99_ms:.2f} | {goal(c)} |")
    print()
    judged = [c for o in outcomes.values() for c in o.cells if goal(c) != "–"]
    if judged:
        missed = [c for c in judged if goal(c) != "met"]
        print(f"Goal (issue 11: GET /versions p99 ≤ {GOAL_P99_MS:g} ms at concurrency {GOAL_CONCURRENCY} on "
              f"PostgreSQL, offsets 0 and {args.versions - PAGE}): "
              + ("met in both cells." if not missed else
                 "missed in " + "; ".join(f"{c.operation} (p99 {c.result.p99_ms:.1f} ms)" for c in missed) + "."))
    for db, o in outcomes.items():
        print(f"Numbering on {db} after the saves: " + ("" if o.numbering_ok else "**FAILED**: ") + o.numbering + ".")
    print()
    print(f"Command: `{command}`")
    print()
    tool = subprocess.run([wrk_binary, "-v"], capture_output=True, text=True).stdout.splitlines()
    limits = ("RATE_LIMITS_ENABLED=false (no limiter)" if args.rate_limits_off else
              f"RATE_LIMITS_ENABLED=true with DEFAULT_REQUESTS_PER_MINUTE=DEFAULT_REQUESTS_PER_DAY={UNLIMITED} "
              "(the limiter writes its count on every request and never answers 429)")
    print(f"- Server: `python -m api.serve`, WORKERS={args.workers}, STT_ENABLED=false, LOG_LEVEL={args.log_level}, "
          f"{limits}; PostgreSQL on a scratch database of {args.postgres_url.rsplit('/', 1)[0]}/…, SQLite in a "
          "temporary DATA_DIR; both removed afterwards.")
    for db, o in outcomes.items():
        print(f"- {db}: one agent, version 1 from POST /agents, versions 2..{args.versions} inserted in process in "
              f"{o.seed_s:.1f} s as the domain writes them (distinct prompts, parent chain, diff summaries, counter "
              f"and head)" + (", then VACUUM ANALYZE" if db == "postgresql" else "")
              + f"; the saves took the agent from version {o.saves_before} to {o.saves_after} in the measured "
              "run (its warm-up saved before that).")
    print(f"- Reads: GET /api/v2/versions/agent/{{id}}?workspaceId=W&limit={PAGE}&offset=0|{args.versions - PAGE}, "
          f"Authorization: Bearer <token>. Saves: PATCH /api/v2/agents/{{id}}?workspaceId=W with "
          '{"config": {"prompt": "<distinct per request>"}}: each makes a version; saves/s counts the saves '
          "answered 200 per measured second, matched against the versions the agent gained.")
    print(f"- Load generator: {(tool or ['wrk'])[0].strip()} (`{wrk_binary}`), -t {args.threads}, closed loop over "
          f"`concurrency` keep-alive connections, {args.cell_warmup} s unrecorded then {args.duration} s measured per "
          "cell; p50/p99 from wrk's histogram of every request. Everything on 127.0.0.1 sharing "
          f"{os.cpu_count()} cores (per-cell CPU on stderr); Python {platform.python_version()}, "
          f"{platform.platform()}. Wall time {wall:.0f} s.")
    for o in outcomes.values():
        for c in o.cells:
            if c.result.errors:
                print(f"- Errors in {c.db} {c.operation} c={c.concurrency}: {c.result.errors}")


def main(argv=None) -> int:
    args = parse_args(argv)
    command = shlex.join(sys.orig_argv)
    started = time.monotonic()
    outcomes: dict[str, Outcome] = {}
    with CLEANUP.guard():
        scripts = scratch_dir("bench_versions_wrk_")
        (scripts / "get.lua").write_text(WRK_DONE_LUA)
        (scripts / "save.lua").write_text(SAVE_LUA)
        binary = find_wrk(args.wrk)
        get_wrk = Wrk(binary, args.threads, args.timeout, script=scripts / "get.lua")
        save_wrk = Wrk(binary, args.threads, args.timeout, script=scripts / "save.lua")
        for db in args.databases:
            log(f"{db}: workers={args.workers}")
            outcomes[db] = bench_database(args, get_wrk, save_wrk, db)
    report(args, outcomes, binary, command, time.monotonic() - started)
    failed = any(c.result.errors for o in outcomes.values() for c in o.cells) or not all(
        o.numbering_ok for o in outcomes.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
