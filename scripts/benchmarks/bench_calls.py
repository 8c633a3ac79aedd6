"""Calls under load on PostgreSQL: recording end-of-call-reports from the webhook, listing a workspace
with 100,000 calls, and exporting them all.

  server    `python -m api.serve` with STT_ENABLED=false, LOG_LEVEL=--log-level (default INFO, the
            service default: one access-log line per request), on a scratch PostgreSQL database made
            on the server of --postgres-url (default postgresql://postgres@127.0.0.1:5432/test) and
            dropped afterwards. Rate limiting as bench_api runs it: RATE_LIMITS_ENABLED=true with
            DEFAULT_REQUESTS_PER_MINUTE=DEFAULT_REQUESTS_PER_DAY=1000000000 (the limiter does its
            per-request write and never answers 429). A workspace and token (the owner's, holding
            calls:webhook-payload, calls:read and calls:export) from `python -m api.admin bootstrap`
  ingest    for each --ingest-workers (default 1,2: WORKERS), a fresh database and server; POST
            /api/v2/webhooks/end-of-call-report?workspaceId=W with the bearer, at --concurrency
            (default 16). wrk's request() gives every report a callId of its own (UUID-shaped hex of
            the run, the wrk thread and the thread's count of requests); the body is otherwise one
            realistic report: a ~1 KB transcript, a summary, a customer number, tags ["a", "b"],
            callType inbound, fixed startedAt/endedAt. reports/s = answers 200 per measured second.
            Afterwards the calls of the workspace are counted in the database: the run must have
            added as many as it had answers 200 (up to one request per connection cut off at the
            run's end, which may have committed unanswered). Goal: >= 500 reports/s per worker
  reads     WORKERS=--read-workers (default 2); --calls (default 100,000) calls copied in process
            straight into the call table (COPY): started_at spread over 90 days, a ~1 KB transcript,
            a summary (1 in 100 mentions a refund), payload '{}' and ingest_warnings '[]'; every
            tenth call tagged "a" and "b". Then VACUUM ANALYZE (the harness's settle_postgres: a
            table's state once autovacuum has seen it), and the API must answer the expected totals.
            GET /api/v2/call?workspaceId=W&limit=20 (the first page) and &offset=<calls/2>, at each
            --read-concurrency (default 1,16), and so the first page filtered by &tag=a and searched
            with &q=refund (a scan of every summary and transcript): what they cost. Goal: p99 <= 25 ms
            for the first page at concurrency 16. A cell whose every request outlasted the run shows
            "none answered" and latencies above its duration
  export    the same database, now served by WORKERS=1 so that the one worker is what is measured:
            GET /api/v2/call/export?workspaceId=W (CSV) and &format=ndjson, once each, streamed with
            httpx; rows/s = rows received (CSV: records, quoted newlines not counted; NDJSON: lines)
            per second of the whole answer, and the serving worker's VmRSS (/proc/<pid>/status; the
            server's spawned workers, or the server itself when it runs its one worker in process)
            sampled every 50 ms: its peak during the export minus its value just before

Each wrk cell: --cell-warmup seconds of the same load unrecorded, then --duration seconds measured;
wrk's closed loop over `concurrency` keep-alive connections; p50/p99 from wrk's histogram of every
request (its Lua done() hook, the harness's). After each wrk run the script waits until no statement
runs on the scratch database (pg_stat_activity), so that the requests a run abandoned at its end do
not load the next. A Markdown table per part on stdout, progress on stderr;
exit status 1 when a cell saw an error answer or a socket error, the calls counted disagree with
the answers, or an export failed or missed rows.

wrk: on PATH or --wrk; installed with apt-get when missing and running as root (the harness's finder).

    scripts/bench_calls [--duration 8] [--concurrency 16] [--ingest-workers 1,2] [--read-workers 2]
                        [--read-concurrency 1,16] [--calls 100000] [--log-level INFO]
                        [--postgres-url URL] [--wrk PATH]
"""
from __future__ import annotations

import csv
import io
import json
import os
import platform
import random
import shlex
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
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

GOAL_INGEST_PER_WORKER = 500.0
GOAL_P99_MS, GOAL_CONCURRENCY = 25.0, 16
PAGE = 20
SEARCH = "refund"  # in 1 of 100 seeded summaries, in no transcript
TAG = "a"  # on every tenth seeded call, with "b"
SPREAD = timedelta(days=90)

# A report's conversation: ~1 KB, as the call runtime sends it (one line per turn, timestamps).
TRANSCRIPT = "\n".join([
    "[00:00] AI: Hello, thank you for calling Acme Billing. My name is Ava. How can I help you today?",
    "[00:05] User: Hi, I'm calling about invoice 1042. I think I was charged twice for the same month.",
    "[00:12] AI: I'm sorry to hear that. Let me look up your account. Could you confirm the phone number on file?",
    "[00:18] User: Sure, it's the number I'm calling from, ending in 0123.",
    "[00:22] AI: Thank you. I can see invoice 1042 and a second charge on the same day for the same amount.",
    "[00:31] User: Yes, that's the one. Can you fix it?",
    "[00:34] AI: I've opened a billing case for the duplicate charge; the team reviews it within two days.",
    "[00:43] User: Will I get an email about it?",
    "[00:45] AI: Yes, you'll get a confirmation email shortly and another once the case is resolved.",
    "[00:52] User: Great, thanks for your help.",
    "[00:54] AI: You're welcome. Is there anything else I can help you with today?",
    "[00:58] User: No, that's all. Goodbye.",
])
SUMMARY = ("The customer reported a duplicate charge on invoice 1042; a billing case was opened and a "
           "confirmation email will follow.")

# Every request a report of a call no other request reports: its callId from BENCH_TAG (one number
# per wrk run), the wrk thread and this thread's count, put where BENCH_BODY (the report, with
# __CALL_ID__ for its callId) has the marker; POSTs of JSON (wrk.headers, with the -H headers), ended by
# the harness's done() hook.
INGEST_LUA = r'''
local run = tonumber(os.getenv("BENCH_TAG") or "0")
local template = os.getenv("BENCH_BODY")
local head, tail
local threads = 0
local count = 0

function setup(thread)
  threads = threads + 1
  thread:set("thread_number", threads)
end

function init(args)
  wrk.headers["Content-Type"] = "application/json"
  local s, e = string.find(template, "__CALL_ID__", 1, true)
  head, tail = string.sub(template, 1, s - 1), string.sub(template, e + 1)
end

function request()
  count = count + 1
  local id = string.format("%08x-%04x-4%03x-8%03x-%012x", run, thread_number or 0, count % 4096,
                           math.floor(count / 4096) % 4096, count)
  return wrk.format("POST", nil, nil, head .. id .. tail)
end
''' + WRK_DONE_LUA


def parse_args(argv=None):
    parser = options.parser("bench_calls", __doc__, options.load_cells(), options.log_level(), options.postgres())
    parser.add_argument("--concurrency", type=int, default=16, help="connections posting reports (default 16)")
    parser.add_argument("--ingest-workers", type=csv_ints, default=[1, 2],
                        help="WORKERS of the ingest cells, comma-separated (default 1,2)")
    parser.add_argument("--read-workers", type=int, default=2, help="WORKERS of the read cells (default 2)")
    parser.add_argument("--read-concurrency", type=csv_ints, default=[1, 16],
                        help="connections of the page reads, comma-separated (default 1,16)")
    parser.add_argument("--calls", type=int, default=100_000, help="calls seeded for the reads and export (default 100000)")
    args = parser.parse_args(argv)
    if (not args.ingest_workers or not args.read_concurrency
            or min(args.ingest_workers + args.read_concurrency + [args.concurrency, args.read_workers]) < 1):
        parser.error("--concurrency, --ingest-workers, --read-workers and --read-concurrency need positive integers")
    if min(args.duration, args.cell_warmup, args.threads, args.timeout) < 1:
        parser.error("--duration, --cell-warmup, --threads and --timeout need whole numbers from 1")
    if args.calls < 2 * PAGE:
        parser.error(f"--calls must be at least {2 * PAGE}")
    return args


@dataclass
class Cell:
    operation: str
    workers: int
    concurrency: int
    result: Result
    server_cores: float
    other_cores: float
    answered: int | None = None  # ingest: answers 200 in the measured run
    added: int | None = None  # ingest: calls the measured run added to the database
    count_ok: bool = True

    @property
    def per_s(self) -> float:
        """Ingest: reports answered 200 per measured second."""
        return (self.answered or 0) / self.result.seconds if self.result.seconds else 0.0


@dataclass
class Export:
    format: str
    status: int
    rows: int
    bytes: int
    seconds: float
    rss_before_kb: int
    rss_peak_kb: int
    pids: list[int]
    ok: bool

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0


_runs = 0


def next_run() -> str:
    """A number for BENCH_TAG: the first part of each callId wrk makes, distinct per wrk run."""
    global _runs
    _runs += 1
    os.environ["BENCH_TAG"] = str((os.getpid() % 65536) * 4096 + _runs)
    return os.environ["BENCH_TAG"]


def measure(wrk: Wrk, server: Server, args, database_url: str, operation: str, workers: int, url: str,
            headers: dict, concurrency: int, body=None, between=None) -> tuple[Cell, object]:
    """One cell: the unrecorded warm-up, then the measured run; ``between()`` is called after the
    warm-up and returned with the cell (the ingest's count of calls before the measured run). After
    each wrk run, the requests it abandoned are let finish: else a slow statement of one run (a
    search) would still hold the database during the next."""
    next_run()
    wrk.run(url, concurrency, args.cell_warmup, headers, body)
    wait_idle(database_url)
    mark = between() if between else None
    next_run()
    meter = CpuMeter(server.group())
    result = wrk.run(url, concurrency, args.duration, headers, body)
    cell = Cell(operation, workers, concurrency, result, *meter.cores())
    wait_idle(database_url)
    log(f"  {operation:40} w={workers} c={concurrency:<3} {result.rps:8.1f} req/s  p50 {result.p50_ms:7.2f} ms  "
        f"p99 {result.p99_ms:7.2f} ms  cores: wrk {result.generator_cores:.2f}, server {cell.server_cores:.2f}, "
        f"elsewhere {cell.other_cores:.2f}" + (f"  errors {result.errors}" if result.errors else ""))
    return cell, mark


# --- a server on a scratch database ---------------------------------------------------------------------

@dataclass
class Service:
    server: Server
    base: str
    headers: dict


def scratch_database(args, name: str) -> tuple[str, Path]:
    """A scratch PostgreSQL database and DATA_DIR, removed at the end of the current scope."""
    data_dir = scratch_dir(f"bench_calls_{name}_")
    return scratch_postgres(args.postgres_url, f"bench_calls_{name}_{os.getpid()}"), data_dir


def env_for(args, database_url: str, data_dir: Path, workers: int) -> dict[str, str]:
    return service_env(WORKERS=workers, DATA_DIR=data_dir, DATABASE_URL=database_url, STT_ENABLED="false",
                       LOG_LEVEL=args.log_level)


def start_server(env: dict[str, str], data_dir: Path, token: str, name: str) -> Service:
    port = free_port()
    base = f"http://127.0.0.1:{port}/api/v2"
    headers = {"Authorization": f"Bearer {token}"}
    server = Server([sys.executable, "-m", "api.serve"], dict(env, API_PORT=str(port)), data_dir / f"{name}.log")
    wait_ready(server, f"{base}/permissions", headers)
    return Service(server, base, headers)


def api_json(url: str, headers: dict) -> dict:
    status, data = fetch(url, headers=headers, timeout=60)
    if status != 200:
        raise RuntimeError(f"GET {url}: {status} {data[:500]!r}")
    return json.loads(data)["data"]["result"]


def wait_idle(database_url: str, timeout: float = 180.0) -> None:
    """Until no client of the database runs a statement or holds a transaction open: the server has
    finished the requests a wrk run left behind."""
    import psycopg2

    started = time.monotonic()
    conn = psycopg2.connect(database_url)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            while True:
                cur.execute("SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() "
                            "AND backend_type = 'client backend' AND state <> 'idle' AND pid <> pg_backend_pid()")
                busy = cur.fetchone()[0]
                if not busy:
                    break
                if time.monotonic() - started > timeout:
                    raise RuntimeError(f"{busy} statements still running {timeout:.0f} s after a run")
                time.sleep(0.1)
    finally:
        conn.close()
    if time.monotonic() - started > 1:
        log(f"  (waited {time.monotonic() - started:.1f} s for the requests left running to finish)")


def count_calls(database_url: str, workspace_id: str) -> int:
    import psycopg2

    conn = psycopg2.connect(database_url)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM call WHERE workspace_id = %s", (workspace_id,))
            return cur.fetchone()[0]
    finally:
        conn.close()


# --- ingest ------------------------------------------------------------------------------------------------

def report_body(workspace_id: str) -> dict:
    """The report every ingest request posts, its callId the marker wrk's request() replaces."""
    return {
        "type": "end-of-call-report", "callId": "__CALL_ID__", "workspaceId": workspace_id,
        "status": "completed", "callEndReasonCategory": "customer", "endedReason": "customer-ended-call",
        "customer": "+14155550123", "startedAt": "2026-11-23T09:00:00Z", "endedAt": "2026-11-23T09:01:00Z",
        "timestamp": "2026-11-23T09:01:01Z", "recordingUrl": "https://recordings.example.com/bench.wav",
        "summary": SUMMARY, "transcript": TRANSCRIPT, "callType": "inbound", "tags": ["a", "b"],
    }


def bench_ingest(args, wrk: Wrk, workers: int) -> Cell:
    with CLEANUP.scope():
        database_url, data_dir = scratch_database(args, f"ingest{workers}")
        env = env_for(args, database_url, data_dir, workers)
        owner = bootstrap(env)
        service = start_server(env, data_dir, owner["token"], "server")
        ws = owner["workspaceId"]
        url = f"{service.base}/webhooks/end-of-call-report?workspaceId={ws}"
        body = report_body(ws)
        # One report by hand first: the body is accepted, and the call is there to read back.
        probe = dict(body, callId=str(uuid.uuid4()))
        status, answer = fetch(url, method="POST", headers=service.headers, json_body=probe)
        if status != 200 or not json.loads(answer)["data"]["result"]["created"]:
            raise RuntimeError(f"POST end-of-call-report: {status} {answer[:500]!r}")

        def settled_count() -> int:
            # A request wrk abandoned at the end of its run may still be on its way to commit.
            time.sleep(0.5)
            wait_idle(database_url)
            return count_calls(database_url, ws)

        cell, before = measure(wrk, service.server, args, database_url, "POST /webhooks/end-of-call-report", workers,
                               url, service.headers, args.concurrency, body=body, between=settled_count)
        after = settled_count()
        result = cell.result
        cell.answered = result.requests - result.errors.get("non-2xx", 0)
        cell.added = after - before
        # Every 200 recorded a call; up to one request per connection was cut off by the run's end
        # and may have recorded one that no answer counts.
        cell.count_ok = cell.answered <= cell.added <= cell.answered + args.concurrency
        log(f"  workers={workers}: {cell.answered} answers 200, {cell.added} calls added "
            f"({cell.per_s:.0f} reports/s, {cell.per_s / workers:.0f} per worker)"
            + ("" if cell.count_ok else "  **MISMATCH**"))
        if result.errors or not cell.count_ok:
            log(service.server.tail(40, skip=" api.access "))
        service.server.check_alive()
        return cell


# --- the seeded calls ---------------------------------------------------------------------------------------

CALL_COLUMNS = ("id", "workspace_id", "call_type", "status", "call_end_reason_category", "ended_reason", "customer",
                "started_at", "ended_at", "duration_ms", "recording_url", "summary", "transcript", "sent_at",
                "payload", "ingest_warnings", "received_at")
TAG_COLUMNS = ("workspace_id", "call_id", "name", "name_key", "created_at")


def seed_calls(database_url: str, workspace_id: str, count: int) -> tuple[float, int, int]:
    """``count`` calls of the workspace, as ingest would have written them from varied reports,
    copied straight into the call table (every tenth call's tags "a" and "b" into call_tag, their
    number into call_count).
    Returns (seconds, calls tagged TAG, calls whose summary mentions SEARCH)."""
    import psycopg2

    rng = random.Random(11)
    now = datetime.utcnow().replace(microsecond=0)
    types = ("inbound", "outbound", "web")
    statuses = ("completed", "completed", "completed", "no-answer", "failed")
    reasons = ("customer-ended-call", "assistant-ended-call", "silence-timed-out")
    tagged = searched = 0
    started = time.monotonic()
    conn = psycopg2.connect(database_url)
    try:
        with conn, conn.cursor() as cur:
            calls, tags = io.StringIO(), io.StringIO()
            call_rows, tag_rows = csv.writer(calls), csv.writer(tags)

            def flush() -> None:
                for buffer, table, columns in ((calls, "call", CALL_COLUMNS), (tags, "call_tag", TAG_COLUMNS)):
                    buffer.seek(0)
                    cur.copy_expert(f"COPY {table} ({', '.join(columns)}) FROM STDIN WITH (FORMAT csv)", buffer)
                    buffer.seek(0)
                    buffer.truncate()

            for n in range(count):
                call_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
                start = now - timedelta(seconds=rng.randrange(int(SPREAD.total_seconds())))
                duration = rng.uniform(20_000, 600_000)
                end = start + timedelta(milliseconds=duration)
                summary = f"Call {n}: " + (f"The customer asked for a {SEARCH} of invoice {n}." if n % 100 == 0 else
                                           SUMMARY)
                searched += n % 100 == 0
                call_rows.writerow([
                    call_id, workspace_id, types[n % 3], statuses[n % 5], "customer", reasons[n % 3],
                    f"+1415555{n % 10000:04d}", start, end, duration, f"https://recordings.example.com/{call_id}.wav",
                    summary, f"[call {n}]\n{TRANSCRIPT}", end + timedelta(seconds=1), "{}", "[]",
                    end + timedelta(seconds=2)])
                if n % 10 == 0:
                    tagged += 1
                    for name in (TAG, "b"):
                        tag_rows.writerow([workspace_id, call_id, name, name, end + timedelta(seconds=2)])
                if n % 10_000 == 9_999:
                    flush()
            flush()
            # The unfiltered list's total, as ingest keeps it (models.calls.calls.CallCount), in one shard.
            cur.execute("INSERT INTO call_count (workspace_id, shard, calls) VALUES (%s, 0, %s) "
                        "ON CONFLICT (workspace_id, shard) DO UPDATE SET calls = call_count.calls + excluded.calls",
                        (workspace_id, count))
    finally:
        conn.close()
    return time.monotonic() - started, tagged, searched


# --- reads -----------------------------------------------------------------------------------------------------

def bench_reads(args, wrk: Wrk, env: dict, database_url: str, data_dir: Path, owner: dict, tagged: int,
                searched: int) -> list[Cell]:
    with CLEANUP.scope():
        workers = args.read_workers
        service = start_server(env, data_dir, owner["token"], "reads")
        ws = owner["workspaceId"]
        list_url = f"{service.base}/call?workspaceId={ws}&limit={PAGE}"
        offset = args.calls // 2
        reads = [("GET /call limit=20 (first page)", list_url, args.calls),
                 (f"GET /call limit=20 offset={offset}", f"{list_url}&offset={offset}", args.calls),
                 (f"GET /call limit=20 tag={TAG}", f"{list_url}&tag={TAG}", tagged),
                 (f"GET /call limit=20 q={SEARCH}", f"{list_url}&q={SEARCH}", searched)]
        for operation, url, total in reads:
            page = api_json(url, service.headers)
            if page["pagination"]["total"] != total or len(page["calls"]) != min(PAGE, total):
                raise RuntimeError(f"{operation}: total {page['pagination']['total']} with {len(page['calls'])} "
                                   f"calls; expected total {total}")
        cells = []
        for operation, url, _ in reads:
            for concurrency in args.read_concurrency:
                cells.append(measure(wrk, service.server, args, database_url, operation, workers, url,
                                     service.headers, concurrency)[0])
        if any(c.result.errors for c in cells):
            log(service.server.tail(40, skip=" api.access "))
        service.server.check_alive()
        return cells


# --- export ------------------------------------------------------------------------------------------------------

def worker_pids(server: Server) -> list[int]:
    """The processes serving requests: the server's spawned uvicorn workers, or the server itself when
    it runs its one worker in process (WORKERS=1)."""
    children = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) != server.pid:  # ppid
                continue
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if b"resource_tracker" not in command:
            children.append(int(entry.name))
    return children or [server.pid]


def rss_kb(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


class RssSampler(threading.Thread):
    """The peak of the summed VmRSS of ``pids``, sampled every ``interval`` seconds until stopped."""

    def __init__(self, pids: list[int], interval: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.pids, self.interval = pids, interval
        self.peak = rss_kb(pids)
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            self.peak = max(self.peak, rss_kb(self.pids))

    def stop(self) -> int:
        self._stop_event.set()
        self.join()
        self.peak = max(self.peak, rss_kb(self.pids))
        return self.peak


def export_once(service: Service, ws: str, fmt: str, expected: int) -> Export:
    import httpx

    pids = worker_pids(service.server)
    url = f"{service.base}/call/export?workspaceId={ws}" + ("&format=ndjson" if fmt == "ndjson" else "")
    before = rss_kb(pids)
    sampler = RssSampler(pids)
    sampler.start()
    records = size = 0
    quoted = False  # CSV: inside a quoted cell at the end of the last chunk (a newline there is data)
    started = time.monotonic()
    try:
        with httpx.Client(timeout=httpx.Timeout(60.0), trust_env=False) as client:
            with client.stream("GET", url, headers=service.headers) as response:
                status = response.status_code
                for chunk in response.iter_raw(65536):
                    size += len(chunk)
                    if fmt == "ndjson":
                        records += chunk.count(b"\n")
                    else:
                        # A record ends at a newline outside quotes; "" inside a cell toggles twice.
                        parts = chunk.split(b'"')
                        records += sum(part.count(b"\n") for part in parts[1 if quoted else 0::2])
                        quoted ^= (len(parts) - 1) % 2 == 1
    finally:
        seconds = time.monotonic() - started
        peak = sampler.stop()
    rows = records - 1 if fmt == "csv" else records  # the CSV's header
    ok = status == 200 and rows == expected
    out = Export(fmt, status, rows, size, seconds, before, peak, pids, ok)
    log(f"  export {fmt:6} {status} {rows} rows in {seconds:.2f} s ({out.rows_per_s:.0f} rows/s, "
        f"{size / 1e6:.1f} MB), worker RSS {before / 1024:.1f} MB -> peak {peak / 1024:.1f} MB"
        + ("" if ok else f"  **expected {expected} rows with 200**"))
    return out


def bench_export(args, env: dict, data_dir: Path, owner: dict) -> list[Export]:
    with CLEANUP.scope():
        service = start_server(dict(env, WORKERS="1"), data_dir, owner["token"], "export")
        exports = [export_once(service, owner["workspaceId"], fmt, args.calls) for fmt in ("csv", "ndjson")]
        if not all(e.ok for e in exports):
            log(service.server.tail(40, skip=" api.access "))
        service.server.check_alive()
        return exports


@dataclass
class Seeded:
    seconds: float
    tagged: int
    searched: int


def bench_reads_and_export(args, wrk: Wrk) -> tuple[Seeded, list[Cell], list[Export]]:
    with CLEANUP.scope():
        database_url, data_dir = scratch_database(args, "reads")
        env = env_for(args, database_url, data_dir, args.read_workers)
        owner = bootstrap(env)
        log(f"seeding {args.calls} calls")
        seconds, tagged, searched = seed_calls(database_url, owner["workspaceId"], args.calls)
        settle_postgres(database_url)
        log(f"  seeded in {seconds:.1f} s ({tagged} tagged {TAG}, {searched} mentioning {SEARCH}), VACUUM ANALYZE done")
        log(f"reads: workers={args.read_workers}")
        cells = bench_reads(args, wrk, env, database_url, data_dir, owner, tagged, searched)
        log("export: workers=1")
        exports = bench_export(args, env, data_dir, owner)
        return Seeded(seconds, tagged, searched), cells, exports


# --- output ------------------------------------------------------------------------------------------------------

def read_goal(cell: Cell) -> str:
    if not cell.operation.endswith("(first page)") or cell.concurrency != GOAL_CONCURRENCY:
        return "–"
    met = cell.result.requests and cell.result.p99_ms <= GOAL_P99_MS
    return "met" if met else f"**missed** (p99 > {GOAL_P99_MS:g} ms)"


def ingest_goal(cell: Cell) -> str:
    per_worker = cell.per_s / cell.workers
    return "met" if per_worker >= GOAL_INGEST_PER_WORKER else f"**missed** (< {GOAL_INGEST_PER_WORKER:g}/s per worker)"


def mb(kb: int) -> str:
    return f"{kb / 1024:.1f}"


def report(args, ingest: list[Cell], seeded: Seeded, reads: list[Cell], exports: list[Export], wrk_binary: str,
           command: str, wall: float) -> None:
    print("### Ingest: POST /api/v2/webhooks/end-of-call-report")
    print()
    print("| workers | concurrency | reports/s | per worker | p50 ms | p99 ms | answers 200 | calls added | goal |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for c in ingest:
        added = f"{c.added}" if c.count_ok else f"**{c.added}**"
        print(f"| {c.workers} | {c.concurrency} | {c.per_s:.0f} | {c.per_s / c.workers:.0f} | {c.result.p50_ms:.2f} | "
              f"{c.result.p99_ms:.2f} | {c.answered} | {added} | {ingest_goal(c)} |")
    print()
    missed = [c for c in ingest if ingest_goal(c) != "met"]
    print(f"Goal: ≥ {GOAL_INGEST_PER_WORKER:g} reports/s per worker: "
          + ("met at every worker count." if not missed else
             "missed at " + "; ".join(f"WORKERS={c.workers} ({c.per_s / c.workers:.0f}/s per worker)" for c in missed)
             + "."))
    print("Calls in the database against answers 200: "
          + ("agree in every run (up to the requests cut off at the run's end)." if all(c.count_ok for c in ingest)
             else "**DISAGREE**: " + "; ".join(f"WORKERS={c.workers}: {c.answered} answers, {c.added} calls"
                                                for c in ingest if not c.count_ok) + "."))
    print()
    print(f"### Reads: GET /api/v2/call, {args.calls} calls, WORKERS={args.read_workers}")
    print()
    print("| request | concurrency | req/s | p50 ms | p99 ms | goal |")
    print("|---|---:|---:|---:|---:|---|")
    for c in reads:
        if c.result.requests:
            print(f"| {c.operation} | {c.concurrency} | {c.result.rps:.1f} | {c.result.p50_ms:.2f} | "
                  f"{c.result.p99_ms:.2f} | {read_goal(c)} |")
        else:  # wrk's histogram is empty: every request took longer than the run
            print(f"| {c.operation} | {c.concurrency} | 0 (none answered in {args.duration} s) | > {args.duration * 1000} | "
                  f"> {args.duration * 1000} | {read_goal(c)} |")
    print()
    judged = [c for c in reads if read_goal(c) != "–"]
    if judged:
        print(f"Goal: p99 ≤ {GOAL_P99_MS:g} ms for the first page at concurrency {GOAL_CONCURRENCY}: "
              + ("met" if all(read_goal(c) == "met" for c in judged) else "**missed**")
              + (f" (p99 {judged[0].result.p99_ms:.2f} ms)." if judged[0].result.requests else
                 f" (no answer within {args.duration} s)."))
    else:
        print(f"Goal: p99 ≤ {GOAL_P99_MS:g} ms for the first page at concurrency {GOAL_CONCURRENCY}: not measured "
              "(--read-concurrency without 16).")
    print()
    print(f"### Export: GET /api/v2/call/export, {args.calls} calls, WORKERS=1")
    print()
    print("| format | status | rows | MB | seconds | rows/s | worker RSS before MB | peak MB | peak − before MB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for e in exports:
        rows = f"{e.rows}" if e.ok else f"**{e.rows}**"
        print(f"| {e.format} | {e.status} | {rows} | {e.bytes / 1e6:.1f} | {e.seconds:.2f} | {e.rows_per_s:.0f} | "
              f"{mb(e.rss_before_kb)} | {mb(e.rss_peak_kb)} | {mb(e.rss_peak_kb - e.rss_before_kb)} |")
    print()
    print(f"Command: `{command}`")
    print()
    tool = subprocess.run([wrk_binary, "-v"], capture_output=True, text=True).stdout.splitlines()
    print(f"- Server: `python -m api.serve`, STT_ENABLED=false, LOG_LEVEL={args.log_level}, RATE_LIMITS_ENABLED=true "
          f"with DEFAULT_REQUESTS_PER_MINUTE=DEFAULT_REQUESTS_PER_DAY={UNLIMITED} (the limiter writes its count on "
          f"every request and never answers 429); PostgreSQL on scratch databases of "
          f"{args.postgres_url.rsplit('/', 1)[0]}/…, one per ingest run and one for reads and export, dropped "
          "afterwards.")
    print("- Ingest: each request a distinct callId (run, wrk thread, count); the body a ~1.3 KB report (transcript "
          f"{len(TRANSCRIPT)} characters, summary, customer, tags [\"a\", \"b\"], callType inbound, fixed "
          "startedAt/endedAt). reports/s = answers 200 per measured second; calls added = the workspace's calls "
          "counted in the database after the measured run minus before it (after its warm-up).")
    print(f"- Reads: {args.calls} calls copied into the call table in {seeded.seconds:.1f} s (started_at over the "
          f"last {SPREAD.days} days, ~1 KB transcripts, payload '{{}}', ingest_warnings '[]'); {seeded.tagged} "
          f"tagged \"{TAG}\" and \"b\"; {seeded.searched} summaries mention \"{SEARCH}\"; then VACUUM ANALYZE.")
    print("- Export: streamed with httpx once per format, while the worker's VmRSS is sampled every 50 ms; "
          "rows/s over the whole answer, client included.")
    print(f"- Load generator: {(tool or ['wrk'])[0].strip()} (`{wrk_binary}`), -t {args.threads}, closed loop over "
          f"`concurrency` keep-alive connections, {args.cell_warmup} s unrecorded then {args.duration} s measured per "
          "cell; p50/p99 from wrk's histogram of every request. Everything on 127.0.0.1 sharing "
          f"{os.cpu_count()} cores (per-cell CPU on stderr); Python {platform.python_version()}, "
          f"{platform.platform()}. Wall time {wall:.0f} s.")
    cells = ingest + reads
    print(f"- CPU per cell, on average: the API's processes {sum(c.server_cores for c in cells) / len(cells):.2f} "
          f"cores, everything else (PostgreSQL and any other load on the machine) "
          f"{sum(c.other_cores for c in cells) / len(cells):.2f} of {os.cpu_count()}.")
    for c in ingest + reads:
        if c.result.errors:
            print(f"- Errors in {c.operation} WORKERS={c.workers} c={c.concurrency}: {c.result.errors}")


def main(argv=None) -> int:
    args = parse_args(argv)
    command = shlex.join(sys.orig_argv)
    started = time.monotonic()
    with CLEANUP.guard():
        scripts = scratch_dir("bench_calls_wrk_")
        (scripts / "get.lua").write_text(WRK_DONE_LUA)
        (scripts / "ingest.lua").write_text(INGEST_LUA)
        binary = find_wrk(args.wrk)
        get_wrk = Wrk(binary, args.threads, args.timeout, script=scripts / "get.lua")
        ingest_wrk = Wrk(binary, args.threads, args.timeout, script=scripts / "ingest.lua")
        ingest = []
        for workers in args.ingest_workers:
            log(f"ingest: workers={workers}")
            ingest.append(bench_ingest(args, ingest_wrk, workers))
        seeded, reads, exports = bench_reads_and_export(args, get_wrk)
    report(args, ingest, seeded, reads, exports, binary, command, time.monotonic() - started)
    failed = (any(c.result.errors or not c.count_ok for c in ingest + reads) or not all(e.ok for e in exports))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
