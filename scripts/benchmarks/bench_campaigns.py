"""Campaign claims on PostgreSQL: contacts claimed per second, and the latency of a claim of 10, by
concurrent claimers of one campaign with a large do-not-call list.

  data      a scratch database made on the server of --postgres-url (dropped afterwards), or the
            migrated, emptied database --database-url: one campaign (maxConcurrentCalls 1000, so
            that the concurrency limit does not starve the claimers) with --contacts (default
            100,000) contacts spread over 8 time zones, and a do-not-call list of --suppressed
            (default 1,000,000) numbers of the workspace, among them one contact in 100; both
            inserted by INSERT ... SELECT generate_series, then VACUUM ANALYZE
  claims    --claimers (default 4) processes, each with its own connection, each claiming --count
            (default 10) contacts through the domain function (models.campaigns.dialing.claim)
            --rounds times (default 300) and reporting each claimed attempt's outcome (completed)
            before its next claim, as a runtime does when its calls end; a claim's latency is its
            transaction, from the campaign's row lock to the commit. Two cases: calling hours open
            in every zone (the claim reads the due contacts in order off one index), and calling
            hours open in some zones only (the claim reads the open zones' ranges). claims/s is
            contacts claimed per second of the run, outcomes included
  plans     with --explain, EXPLAIN ANALYZE of the zone walk and of each claim statement (rolled
            back), on stderr

Goal: a claim of 10 at p99 <= 25 ms with 4 claimers. A Markdown table on stdout, progress on stderr.

    scripts/bench_campaigns [--contacts 100000] [--suppressed 1000000] [--claimers 4] [--count 10]
                            [--rounds 300] [--explain] [--postgres-url URL | --database-url URL]
"""
from __future__ import annotations

import os
import multiprocessing
import time
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from . import options
from .harness import CLEANUP, log, percentile, scratch_postgres, settle_postgres

ZONES = ("America/Los_Angeles", "America/Denver", "America/Chicago", "America/New_York", "Europe/London",
         "Europe/Paris", "Asia/Kolkata", "Asia/Tokyo")
ALL_DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


def main(argv=None) -> None:
    parser = options.parser("bench_campaigns", __doc__, options.postgres())
    parser.add_argument("--database-url", help="a PostgreSQL database to use instead of a scratch one: "
                                               "migrated, and its campaign tables emptied first")
    parser.add_argument("--contacts", type=int, default=100_000)
    parser.add_argument("--suppressed", type=int, default=1_000_000)
    parser.add_argument("--claimers", type=int, default=4)
    parser.add_argument("--count", type=int, default=10, help="contacts per claim (default 10)")
    parser.add_argument("--rounds", type=int, default=300, help="claims per claimer and case (default 300)")
    parser.add_argument("--explain", action="store_true", help="EXPLAIN ANALYZE the claim's statements")
    parser.add_argument("--synchronous-commit", choices=("on", "off"), default="on",
                        help="the database's synchronous_commit (default on, as shipped); off shows what a claim "
                             "costs without waiting for the disk's flush at each commit (a diagnosis, not a setting "
                             "to run with: a claim lost in a crash would be dialled again)")
    args = parser.parse_args(argv)
    os.environ["LOG_LEVEL"] = "WARNING"
    from models.kernel.db import database, open_database
    from models.migrations import migrate
    with CLEANUP.guard():
        url = args.database_url or scratch_postgres(args.postgres_url, f"bench_campaigns_{os.getpid()}")
        _set_synchronous_commit(url, args.synchronous_commit)
        log(f"a commit's flush: p50 {_commit_ms(url):.2f} ms (synchronous_commit={args.synchronous_commit})")
        open_database(url, pool_size=args.claimers + 2)
        with database.connection_context():
            migrate()
        CLEANUP.push(lambda: database.close_all())
        rows = []
        for case, hours in (("every zone open", _open_everywhere()), ("some zones open", _open_in_some())):
            owner, campaign_id = _seed(url, args, hours)
            opened = _open_zones(hours)
            log(f"{case}: {len(opened)} of {len(ZONES)} zones open ({', '.join(opened)})")
            if args.explain:
                _explain(url, owner, campaign_id)
            rows.append(_run(case, url, owner, campaign_id, args, len(opened)))
        print(f"| case | claims/s (contacts) | claim of {args.count}: p50 ms | p90 ms | p99 ms | note |")
        print("|---|---:|---:|---:|---:|---|")
        for row in rows:
            print("| " + " | ".join(row) + " |")


def _set_synchronous_commit(url: str, value: str) -> None:
    import psycopg2
    conn = psycopg2.connect(url)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("SELECT current_database()")
        cur.execute(f'ALTER DATABASE "{cur.fetchone()[0]}" SET synchronous_commit = {value}')
    conn.close()


def _commit_ms(url: str) -> float:
    """The median time of a one-row INSERT and its commit: the disk's flush, mostly."""
    import psycopg2
    conn = psycopg2.connect(url)
    times = []
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS bench_commit_probe (x int)")
        conn.commit()
        for _ in range(50):
            started = time.perf_counter()
            cur.execute("INSERT INTO bench_commit_probe VALUES (1)")
            conn.commit()
            times.append((time.perf_counter() - started) * 1000)
        cur.execute("DROP TABLE bench_commit_probe")
        conn.commit()
    conn.close()
    return percentile(times, 50)


def _open_everywhere() -> dict:
    return {"days": ALL_DAYS, "start": "00:00", "end": "24:00"}


def _open_in_some() -> dict:
    """Hours of the clock that hold now in about half the zones: the hours around Chicago's now."""
    local = datetime.now(timezone.utc).astimezone(ZoneInfo("America/Chicago"))
    start = max(0, local.hour - 3)
    end = min(24, local.hour + 4)
    return {"days": ALL_DAYS, "start": f"{start:02d}:00", "end": f"{end:02d}:00" if end < 24 else "24:00"}


def _open_zones(hours: dict) -> list[str]:
    from models.campaigns import dialing
    from models.kernel.db import utcnow
    return dialing.open_zones(hours, list(ZONES), utcnow())


def _seed(url: str, args, hours: dict):
    import psycopg2

    from tests.support.factories.campaigns import campaign_row
    from tests.support.factories.identity import workspace
    conn = psycopg2.connect(url)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("DELETE FROM campaign_attempt; DELETE FROM campaign_contact; DELETE FROM campaign; "
                    "DELETE FROM suppressed_number; DELETE FROM phone_number")
    owner = workspace("Bench")
    campaign_id = campaign_row(owner, max_concurrent_calls=1000, max_attempts=3, retry_delay_s=3600,
                               calling_hours=hours)
    log(f"seeding {args.contacts:,} contacts over {len(ZONES)} zones and {args.suppressed:,} do-not-call numbers")
    started = time.perf_counter()
    due = datetime.now(timezone.utc).replace(tzinfo=None) - timedelta(hours=1)
    with conn.cursor() as cur:
        cur.execute("""
            INSERT INTO campaign_contact (id, workspace_id, campaign_id, number, name, time_zone, variables, state,
                                          attempts, next_attempt_at, created_at, updated_at)
            SELECT md5(%(c)s || i)::uuid::text, %(w)s, %(c)s, '+1555' || lpad(i::text, 7, '0'), 'Contact ' || i,
                   (%(zones)s::text[])[1 + i %% %(n)s], '{"i": ' || i || '}', 'pending', 0,
                   %(due)s + (i * interval '1 millisecond'), %(due)s, %(due)s
            FROM generate_series(1, %(contacts)s) AS i""",
                    {"c": campaign_id, "w": owner.workspace_id, "zones": list(ZONES), "n": len(ZONES),
                     "due": due, "contacts": args.contacts})
        # One contact in 100 is listed; the rest of the list are other numbers.
        cur.execute("""
            INSERT INTO suppressed_number (id, workspace_id, number, source, added_by, added_at)
            SELECT md5('s' || i)::uuid::text, %(w)s,
                   CASE WHEN i %% 100 = 0 AND i <= %(contacts)s THEN '+1555' || lpad(i::text, 7, '0')
                        ELSE '+1666' || lpad(i::text, 8, '0') END,
                   'import', %(u)s, %(due)s
            FROM generate_series(1, %(suppressed)s) AS i""",
                    {"w": owner.workspace_id, "u": owner.user_id, "due": due, "contacts": args.contacts,
                     "suppressed": args.suppressed})
    conn.close()
    settle_postgres(url)
    log(f"seeded in {time.perf_counter() - started:.1f} s")
    return owner, campaign_id


def _claimer(url: str, workspace_id: str, user_id: str, campaign_id: str, count: int, rounds: int,
             start, results) -> None:
    """One claimer process: ``rounds`` claims of ``count``, each claimed attempt's outcome reported
    before the next claim; puts (latencies in ms, contacts claimed) on ``results``."""
    os.environ["LOG_LEVEL"] = "WARNING"
    from models.campaigns import dialing
    from models.kernel.db import open_database, session
    open_database(url, pool_size=1)
    latencies, claimed = [], 0
    try:
        with session():
            for warmup in (True, False):
                if not warmup:
                    start.wait()
                for _ in range(3 if warmup else rounds):
                    started = time.perf_counter()
                    got = dialing.claim(workspace_id=workspace_id, campaign_id=campaign_id, count=count)
                    if not warmup:
                        latencies.append((time.perf_counter() - started) * 1000)
                        claimed += len(got.claims)
                    for claim in got.claims:
                        dialing.report_outcome(workspace_id=workspace_id, campaign_id=campaign_id,
                                               attempt_id=claim.attempt_id, outcome="completed", added_by=user_id)
        results.put((latencies, claimed, None))
    except BaseException as exc:  # reported by the parent
        results.put(([], 0, repr(exc)))


def _run(case: str, url: str, owner, campaign_id: str, args, open_zones: int) -> list[str]:
    """--claimers processes (each its own connection and interpreter, as runtimes calling several
    API processes would be), released together once each has prepared its statements."""
    from models.kernel.db import database
    # Forked (the command's script would run again in a spawned process): with no connection of
    # this process open to be shared.
    database.close_all()
    ctx = multiprocessing.get_context("fork")
    start, results = ctx.Event(), ctx.Queue()
    workers = [ctx.Process(target=_claimer, args=(url, owner.workspace_id, owner.user_id, campaign_id, args.count,
                                                    args.rounds, start, results)) for _ in range(args.claimers)]
    for worker in workers:
        worker.start()
    time.sleep(2)  # the processes connect and warm up; the clock starts at the release
    started = time.perf_counter()
    start.set()
    reports = [results.get(timeout=300) for _ in workers]
    elapsed = time.perf_counter() - started
    for worker in workers:
        worker.join()
    failed = [error for _, _, error in reports if error]
    if failed:
        raise RuntimeError(f"a claimer failed: {failed[0]}")
    latencies = [ms for report in reports for ms in report[0]]
    claimed = sum(report[1] for report in reports)
    rate = claimed / elapsed
    row = [f"{case} ({open_zones}/{len(ZONES)} zones), {args.claimers} claimers", f"{rate:,.0f}",
           f"{percentile(latencies, 50):.2f}", f"{percentile(latencies, 90):.2f}", f"{percentile(latencies, 99):.2f}",
           f"{len(latencies)} claims, {claimed:,} contacts in {elapsed:.1f} s, each claim's outcomes reported"]
    log(" | ".join(row))
    return row


def _numbered(sql: str) -> str:
    """``%s`` placeholders as $1, $2...: what PREPARE takes."""
    parts = sql.split("%s")
    return "".join(part + (f"${i + 1}" if i < len(parts) - 1 else "") for i, part in enumerate(parts))


def _explain(url: str, owner, campaign_id: str) -> None:
    """The plans of the zone walk and of each claim statement, as the domain sends them (rolled back)."""
    import psycopg2

    from models.campaigns import dialing
    from models.kernel.db import utcnow
    now = utcnow()
    until = now + timedelta(seconds=300)
    conn = psycopg2.connect(url)
    zones = list(ZONES)
    statements = [
        ("zone walk", dialing._PENDING_ZONES.template.format(p="%s"), (campaign_id, campaign_id)),
        ("claim, every zone open", dialing._CONTACTS._claim_many[True].template.format(p="%s"),
         (now, now, until, until, now, campaign_id, now, 3, 10)),
        ("claim in one open zone", dialing._CONTACTS_IN_ZONE._claim_many[True].template.format(p="%s"),
         (now, now, until, until, now, campaign_id, now, 3, zones[5], 10)),
        ("what is left to try", dialing._LEFT_TO_TRY.template.format(p="%s"), (campaign_id, campaign_id)),
    ]
    with conn.cursor() as cur:
        for name, sql, params in statements:
            # As the service runs them: prepared, and planned for any parameters (a generic plan).
            cur.execute("SET plan_cache_mode = force_generic_plan")
            cur.execute("PREPARE explained AS " + _numbered(sql))
            cur.execute(f"EXPLAIN (ANALYZE, BUFFERS) EXECUTE explained ({', '.join(['%s'] * len(params))})", params)
            log(f"--- {name}\n" + "\n".join(r[0] for r in cur.fetchall()))
            conn.rollback()
            cur.execute("DEALLOCATE explained")
    conn.close()


if __name__ == "__main__":
    main()
