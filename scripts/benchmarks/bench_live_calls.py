"""Live calls under load on PostgreSQL: calls registered as they start and moved through their
statuses, as call runtimes send them.

  server    `python -m api.serve` with STT_ENABLED=false, LOG_LEVEL=--log-level (default INFO: one
            access-log line per request) and rate limiting as bench_calls runs it (on, limits never
            reached), on a scratch PostgreSQL database made on the server of --postgres-url and dropped
            afterwards; for each --workers (default 1,2: WORKERS) a fresh database and server. A
            workspace and its owner's token from `python -m api.admin bootstrap`, an agent made by
            POST /agents (its version 1 is what the calls run)
  load      wrk at --concurrency connections (default 16), one wrk thread per connection, so that
            each connection plays one runtime in order: POST /call/live (a callId of its own: the
            run, the thread and its count of calls), then POST /call/{callId}/status ringing,
            in-progress, ended; again with the next call. Every request is a registration or a
            status move; requests/s = answers 200 per measured second, p50/p99 from wrk's histogram.
            Afterwards the rows are counted in the database: the registrations and moves the run
            added must equal its answers 200 (give or take one request per connection cut off at
            the run's end). Goal: >= 500 registrations and moves per second per worker. Each
            request commits once: the database's flush at each commit (measured before each cell:
            a one-row INSERT's median) bounds what one worker serves, its handlers running one at a
            time; --synchronous-commit off shows the cost without it
  baseline  on the same server and database, right after: POST /webhooks/end-of-call-report as
            bench_calls posts it (a ~1 KB transcript, a callId of its own per request), the ingest
            whose goal this one shares, measured on the same machine at the same moment
            (--threads is not read: wrk runs a thread per connection)

Each cell: --cell-warmup seconds of the same load unrecorded, then --duration seconds measured. A
Markdown table on stdout, progress on stderr; exit status 1 when a cell saw an error answer or a
socket error, or the rows counted disagree with the answers.

wrk: on PATH or --wrk; installed with apt-get when missing and running as root (the harness's finder).

    scripts/bench_live_calls [--duration 8] [--concurrency 16] [--workers 1,2] [--synchronous-commit on]
                             [--log-level INFO] [--postgres-url URL] [--wrk PATH]
"""
from __future__ import annotations

import json
import os
import time

from . import bench_calls, options
# The database's commit setting and the time of one flush, as the claims' benchmark sets and measures them.
from .bench_campaigns import _commit_ms as commit_ms
from .bench_campaigns import _set_synchronous_commit as set_synchronous_commit
from .harness import CLEANUP, WRK_DONE_LUA, Wrk, bootstrap, fetch, find_wrk, log, scratch_dir

GOAL_PER_WORKER = 500.0

# Each wrk thread holds one connection: the runtime of one call at a time, in order. Its calls are
# numbered per thread; the callId names the run (BENCH_TAG), the thread and the call.
LIVE_LUA = r'''
local run = tonumber(os.getenv("BENCH_TAG") or "0")
local workspace = os.getenv("BENCH_WORKSPACE")
local template = os.getenv("BENCH_BODY")
local moves = {'{"status": "ringing"}', '{"status": "in-progress"}', '{"status": "ended"}'}
local threads = 0
local step = 0
local call = 0

function setup(thread)
  threads = threads + 1
  thread:set("thread_number", threads)
end

function init(args)
  wrk.headers["Content-Type"] = "application/json"
end

-- The request of the current step; wrk may ask for one it never sends (at start), so the step moves
-- on with each answer, not with each request made.
function request()
  local id = string.format("bench_%x_%x_%x", run, thread_number or 0, call)
  if step == 0 then
    return wrk.format("POST", "/api/v2/call/live?workspaceId=" .. workspace, nil,
                      string.gsub(template, "__CALL_ID__", id))
  end
  return wrk.format("POST", "/api/v2/call/" .. id .. "/status?workspaceId=" .. workspace, nil, moves[step])
end

function response(status, headers, body)
  step = (step + 1) % 4
  if step == 0 then
    call = call + 1
  end
end
''' + WRK_DONE_LUA


def main(argv=None) -> int:
    parser = options.parser("bench_live_calls", __doc__, options.load_cells(), options.log_level(), options.postgres(),
                            options.workers([1, 2]))
    parser.add_argument("--concurrency", type=int, default=16, help="connections, one runtime each (default 16)")
    parser.add_argument("--synchronous-commit", choices=("on", "off"), default="on",
                        help="the scratch database's synchronous_commit (default on, as shipped); off shows what a "
                             "request costs without waiting for the disk's flush at its commit (a diagnosis, not a "
                             "setting to run with)")
    args = parser.parse_args(argv)
    if min(args.workers + [args.concurrency, args.duration, args.cell_warmup, args.timeout]) < 1:
        parser.error("--workers, --concurrency, --duration, --cell-warmup and --timeout need positive integers")
    failed = False
    rows = []
    with CLEANUP.guard():
        work = scratch_dir("bench_live_calls_")
        script = work / "live.lua"
        script.write_text(LIVE_LUA)
        # A thread per connection: each connection's requests follow one another, a call's in order.
        wrk = Wrk(find_wrk(args.wrk), args.concurrency, args.timeout, script)
        ingest_script = work / "ingest.lua"
        ingest_script.write_text(bench_calls.INGEST_LUA)
        ingest = Wrk(wrk.binary, args.concurrency, args.timeout, ingest_script)
        for workers in args.workers:
            cell_rows, ok = _cell(args, wrk, ingest, workers)
            rows += cell_rows
            failed |= not ok
    print("| requests | workers | connections | answers 200/s | per worker | p50 ms | p99 ms | commit flush p50 ms "
          "| rows added / answers 200 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 1 if failed else 0


def _cell(args, wrk: Wrk, ingest: Wrk, workers: int) -> tuple[list[list[str]], bool]:
    with CLEANUP.scope():
        database_url, data_dir = bench_calls.scratch_database(args, f"live{workers}")
        set_synchronous_commit(database_url, args.synchronous_commit)
        flush_ms = commit_ms(database_url)
        log(f"a commit's flush: p50 {flush_ms:.2f} ms (synchronous_commit={args.synchronous_commit})")
        env = bench_calls.env_for(args, database_url, data_dir, workers)
        owner = bootstrap(env)
        service = bench_calls.start_server(env, data_dir, owner["token"], "server")
        ws = owner["workspaceId"]
        os.environ["BENCH_WORKSPACE"] = ws
        status, answer = fetch(f"{service.base}/agents?workspaceId={ws}", method="POST", headers=service.headers,
                               json_body={"name": "Bench agent"})
        if status != 200:
            raise RuntimeError(f"POST /agents: {status} {answer[:500]!r}")
        agent = json.loads(answer)["data"]["result"]["agent"]["id"]
        version = bench_calls.api_json(f"{service.base}/versions/agent/{agent}?workspaceId={ws}",
                                       service.headers)["versions"][0]["id"]
        body = {"callId": "__CALL_ID__", "direction": "inbound", "entityType": "agent", "entityId": agent,
                "versionId": version, "from": "+14155550123", "to": "+14155550100"}
        # One call by hand first: the body is accepted.
        probe = dict(body, callId="probe")
        status, answer = fetch(f"{service.base}/call/live?workspaceId={ws}", method="POST", headers=service.headers,
                               json_body=probe)
        if status != 200:
            raise RuntimeError(f"POST /call/live: {status} {answer[:500]!r}")

        def rows_now() -> int:
            time.sleep(0.5)  # a request wrk abandoned at the end of its run may still be on its way to commit
            bench_calls.wait_idle(database_url)
            return _count_rows(database_url, ws)

        # The live calls' script makes each request's path; wrk needs a URL all the same.
        live = _measured(args, wrk, service, service.base.removesuffix("/api/v2"), database_url, workers,
                         "registrations and moves", body, lambda: _count_rows(database_url, ws), flush_ms)
        # The baseline, on the same server and database at the same moment: end-of-call-reports, the
        # ingest whose goal is the same, each one call (bench_calls's body and request()).
        baseline = _measured(args, ingest, service, f"{service.base}/webhooks/end-of-call-report?workspaceId={ws}",
                             database_url, workers, "end-of-call-reports (baseline)",
                             bench_calls.report_body(ws), lambda: bench_calls.count_calls(database_url, ws), flush_ms)
        service.server.check_alive()
        return [live[0], baseline[0]], live[1] and baseline[1]


def _measured(args, wrk: Wrk, service, url: str, database_url: str, workers: int, name: str, body: dict, rows,
              flush_ms: float) -> tuple[list[str], bool]:
    """One cell: its answers 200 per second, checked against the rows it added."""
    def rows_now() -> int:
        time.sleep(0.5)  # a request wrk abandoned at the end of its run may still be on its way to commit
        bench_calls.wait_idle(database_url)
        return rows()

    cell, before = bench_calls.measure(wrk, service.server, args, database_url, name, workers, url, service.headers,
                                       args.concurrency, body=body, between=rows_now)
    added = rows_now() - before
    result = cell.result
    answered = result.requests - result.errors.get("non-2xx", 0)
    per_s = answered / result.seconds if result.seconds else 0.0
    count_ok = answered <= added <= answered + args.concurrency
    log(f"  {name}, workers={workers}: {answered} answers 200, {added} rows added ({per_s:.0f}/s, "
        f"{per_s / workers:.0f} per worker; goal >= {GOAL_PER_WORKER:.0f})" + ("" if count_ok else "  **MISMATCH**"))
    if result.errors or not count_ok:
        log(service.server.tail(40, skip=" api.access "))
        # The answers that were not 200, as the access log wrote them.
        log("\n".join(line for line in service.server.tail(100_000).splitlines()
                      if " api.access " in line and " 200 " not in line))
    return ([name, str(workers), str(args.concurrency), f"{per_s:.0f}", f"{per_s / workers:.0f}", f"{result.p50_ms:.2f}",
             f"{result.p99_ms:.2f}", f"{flush_ms:.2f}", f"{added} / {answered}" + ("" if count_ok else " MISMATCH")],
            count_ok and not result.errors)


def _count_rows(database_url: str, workspace_id: str) -> int:
    """Registrations and moves of the workspace: its live calls and their status moves."""
    import psycopg2

    conn = psycopg2.connect(database_url)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT (SELECT COUNT(*) FROM live_call WHERE workspace_id = %s) "
                        "+ (SELECT COUNT(*) FROM live_call_move WHERE workspace_id = %s)", (workspace_id, workspace_id))
            return cur.fetchone()[0]
    finally:
        conn.close()


if __name__ == "__main__":
    main()
