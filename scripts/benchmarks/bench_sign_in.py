"""Signing in: how long POST /auth/sign-in takes for an unknown email, a known email with a wrong
password and a known email with the right one; the first two must not tell apart (the same work:
an unknown email is checked against a dummy hash).

The management API in this process (Starlette's test client, one request after another,
LOG_LEVEL=WARNING, rate limits on, the anonymous one never reached), on SQLite, or on a scratch
PostgreSQL database with --postgres. --requests users with a password (each tried once per case,
so that the per-email throttle never counts ten) and as many unknown emails; the three cases
interleaved request by request, so that the machine's load weighs on each alike; the median and
p90 of each case, and the difference of the first two medians.

A Markdown table on stdout, progress on stderr.

    scripts/bench_sign_in [--requests 50] [--postgres] [--postgres-url URL]
"""
from __future__ import annotations

import os
import time

from . import options
from .harness import CLEANUP, log, median, percentile, scratch_dir, scratch_postgres

PASSWORD = "correct horse battery staple"


def main(argv=None) -> None:
    parser = options.parser("bench_sign_in", __doc__, options.rounds(requests=50), options.postgres())
    parser.add_argument("--postgres", action="store_true", help="on a scratch PostgreSQL database (default SQLite)")
    args = parser.parse_args(argv)
    with CLEANUP.guard():
        work = scratch_dir("bench-sign-in-")
        url = scratch_postgres(args.postgres_url, f"bench_sign_in_{os.getpid()}") if args.postgres else None
        client, emails = _app(url, work, args.requests)
        times = {"unknown email": [], "known email, wrong password": [], "known email, right password": []}
        for i, email in enumerate(emails):
            times["unknown email"].append(_timed(client, f"nobody-{i}@example.com", PASSWORD, 401))
            times["known email, wrong password"].append(_timed(client, email, "not the password at all", 401))
            times["known email, right password"].append(_timed(client, email, PASSWORD, 200))
        print(f"| case ({args.requests} each, {'PostgreSQL' if url else 'SQLite'}) | p50 ms | p90 ms |\n|---|---:|---:|")
        for case, values in times.items():
            print(f"| {case} | {median(values):.1f} | {percentile(values, 90):.1f} |")
        gap = median(times["known email, wrong password"]) - median(times["unknown email"])
        print(f"\nknown (wrong password) minus unknown, medians: {gap:+.1f} ms")


def _app(url: str | None, work, users: int):
    os.environ["LOG_LEVEL"] = "WARNING"
    from starlette.testclient import TestClient

    from api.app import create_app
    from core.settings import Settings
    from tests.support import factories
    from tests.support.factories import sign_in
    settings = Settings(database_url=url, data_dir=str(work), transcription_workers=0, webhook_workers=0,
                        retention_interval_s=0, anonymous_requests_per_minute=10**8,
                        anonymous_requests_per_day=10**9, log_level="WARNING")
    client = TestClient(create_app(settings))
    client.__enter__()
    CLEANUP.push(lambda: client.__exit__(None, None, None))
    log(f"{users} users with a password...")
    owner = factories.workspace("Bench")
    emails = []
    for _ in range(users):
        member = factories.member(owner, "member")
        sign_in.password(member, PASSWORD)
        emails.append(member.email)
    return client, emails


def _timed(client, email: str, password: str, expect: int) -> float:
    started = time.perf_counter()
    response = client.post("/api/v2/auth/sign-in", json={"email": email, "password": password})
    elapsed = (time.perf_counter() - started) * 1000
    assert response.status_code == expect, response.text
    return elapsed
