"""Rate limit counters: windows, refusals that do not count, and exactness across processes."""
from __future__ import annotations

import multiprocessing

import pytest

from models.identity.rate_limits import Limit, address_counter, consume, forget_past_addresses
from models.identity.tables import RateLimitUsage
from models.kernel.db import database, open_database

T0 = 1_800_000_000.0  # a minute boundary: T0 % 60 == 0 (and a day starts at T0 - 57600)


def test_minute_limit_admits_exactly_the_limit_then_resets(db):
    limit = Limit(per_minute=3, per_day=100)
    decisions = [consume("k", limit, now=T0 + i) for i in range(4)]
    assert [d.allowed for d in decisions] == [True, True, True, False]
    assert [d.remaining for d in decisions] == [2, 1, 0, 0]
    assert decisions[-1].reset_s == 57 and decisions[-1].limit == 3
    assert consume("k", limit, now=T0 + 60).allowed


def test_day_limit_holds_across_minutes(db):
    limit = Limit(per_minute=10, per_day=2)
    assert consume("k", limit, now=T0).allowed and consume("k", limit, now=T0 + 61).allowed
    refused = consume("k", limit, now=T0 + 122)
    assert not refused.allowed and refused.limit == 2
    day_start = T0 // 86_400 * 86_400
    assert refused.reset_s == int(day_start + 86_400 - (T0 + 122))


def test_a_request_refused_by_the_day_does_not_use_up_the_minute(db):
    limit = Limit(per_minute=2, per_day=3)
    assert all(consume("k", limit, now=T0 + i).allowed for i in range(2))
    assert consume("k", limit, now=T0 + 60).allowed
    assert not consume("k", limit, now=T0 + 61).allowed
    usage = RateLimitUsage.get_by_id("k")
    assert (usage.minute, usage.minute_hits, usage.day_hits) == (int((T0 + 60) // 60), 1, 3)


def test_headers_report_the_window_closest_to_exhaustion(db):
    decision = consume("k", Limit(per_minute=100, per_day=5), now=T0)
    assert (decision.limit, decision.remaining) == (5, 4)


def test_one_row_per_credential_whatever_the_windows_passed(db):
    limit = Limit(per_minute=5, per_day=1000)
    for minute in range(5):
        consume("k", limit, now=T0 + 60 * minute)
    assert RateLimitUsage.select().where(RateLimitUsage.credential_id == "k").count() == 1
    assert RateLimitUsage.get_by_id("k").day_hits == 5


def test_a_lagging_clock_counts_into_the_newer_window_and_never_reopens_an_older_one(db):
    """Processes' clocks differ: a request stamped in the previous minute after the next one began
    must not reset the count, or a limit could be exceeded by the skew."""
    limit = Limit(per_minute=2, per_day=1000)
    assert consume("k", limit, now=T0 + 60).allowed and consume("k", limit, now=T0 + 60.5).allowed
    assert not consume("k", limit, now=T0 + 59.9).allowed
    assert RateLimitUsage.get_by_id("k").minute == int((T0 + 60) // 60)


def test_credentials_are_counted_apart(db):
    limit = Limit(per_minute=1, per_day=10)
    assert consume("a", limit, now=T0).allowed and consume("b", limit, now=T0).allowed
    assert not consume("a", limit, now=T0).allowed


def test_an_ipv4_client_is_counted_by_its_address():
    assert address_counter("203.0.113.5") == "address:203.0.113.5"
    assert address_counter("203.0.113.5") != address_counter("203.0.113.6")
    # The same host reached over IPv6 as an IPv4-mapped address.
    assert address_counter("::ffff:203.0.113.5") == address_counter("203.0.113.5")


def test_an_ipv6_client_is_counted_by_its_64_bit_prefix():
    first = address_counter("2001:db8:0:1::1")
    assert first == "address:2001:db8:0:1::/64"
    # Anywhere in the same /64 (the last address of it too), however written, with a zone or not.
    assert address_counter("2001:0db8:0000:0001:ffff:ffff:ffff:ffff") == first
    assert address_counter("2001:db8:0:1::1%eth0") == first
    # The next /64 (one bit past the prefix) is another client.
    assert address_counter("2001:db8:0:2::1") != first
    assert address_counter("2001:db8:0:0:ffff:ffff:ffff:ffff") != first


def test_what_is_no_address_shares_one_counter_apart_from_credentials():
    assert address_counter(None) == address_counter("") == address_counter("testclient") == address_counter("x" * 300)
    for counter in (address_counter("203.0.113.5"), address_counter("2001:db8::1"), address_counter(None)):
        # Credential ids are UUIDs, the signed webhooks' counters webhook-signing:<workspace>.
        assert counter.startswith("address:") and len(counter) <= 255


def test_addresses_are_counted_apart(db):
    limit = Limit(per_minute=1, per_day=10)
    assert consume(address_counter("203.0.113.5"), limit, now=T0).allowed
    assert consume(address_counter("2001:db8:0:1::1"), limit, now=T0).allowed
    assert not consume(address_counter("2001:db8:0:1::2"), limit, now=T0).allowed
    assert not consume(address_counter("203.0.113.5"), limit, now=T0).allowed


def test_address_counters_of_past_days_are_forgotten_and_nothing_else(db):
    limit = Limit(per_minute=5, per_day=10)
    day = 86_400
    consume(address_counter("203.0.113.5"), limit, now=T0)
    consume(address_counter("203.0.113.6"), limit, now=T0 + day)
    consume("a-credential", limit, now=T0)
    assert forget_past_addresses(now=T0 + day) == 1  # counted the day before
    kept = {row.credential_id for row in RateLimitUsage.select()}
    assert kept == {address_counter("203.0.113.6"), "a-credential"}
    last_second = ((T0 + day) // day + 1) * day - 1  # of the day 203.0.113.6 was counted in
    assert forget_past_addresses(now=last_second) == 0
    assert forget_past_addresses(now=last_second + 1) == 1


def _hammer(url: str, data_dir: str, attempts: int, limit: Limit, start, results) -> None:
    open_database(url, data_dir, pool_size=2)
    start.wait()
    admitted = 0
    with database.connection_context():
        for _ in range(attempts):
            admitted += consume("shared", limit, now=T0 + 1).allowed
    results.put(admitted)


@pytest.mark.parametrize("processes", [4])
def test_no_over_admission_across_processes(db, tmp_path, processes):
    """Several processes race on one credential: exactly the limit is admitted."""
    ctx = multiprocessing.get_context("spawn")
    limit = Limit(per_minute=37, per_day=1000)
    start, results = ctx.Event(), ctx.Queue()
    workers = [ctx.Process(target=_hammer, args=(db, str(tmp_path), 25, limit, start, results)) for _ in range(processes)]
    for w in workers:
        w.start()
    start.set()
    admitted = [results.get(timeout=120) for _ in workers]
    for w in workers:
        w.join(timeout=30)
    assert sum(admitted) == 37, admitted
    assert RateLimitUsage.get_by_id("shared").minute_hits == 37


def _straddle(url: str, data_dir: str, offset: float, start, results) -> None:
    open_database(url, data_dir, pool_size=2)
    start.wait()
    errors = 0
    with database.connection_context():
        for i in range(40):
            # Half the processes count in the old minute while the others open the new one.
            try:
                consume("edge", Limit(per_minute=10_000, per_day=100_000), now=T0 + 60 * (i // 2) + offset)
            except Exception as exc:  # a deadlock surfaces as an error of the driver
                errors += 1
                print(exc)
    results.put(errors)


def test_minute_turnover_under_concurrency_does_not_deadlock(db, tmp_path):
    ctx = multiprocessing.get_context("spawn")
    start, results = ctx.Event(), ctx.Queue()
    workers = [ctx.Process(target=_straddle, args=(db, str(tmp_path), offset, start, results))
               for offset in (-0.5, 0.0, 59.5, 0.5)]
    for w in workers:
        w.start()
    start.set()
    errors = [results.get(timeout=120) for _ in workers]
    for w in workers:
        w.join(timeout=30)
    assert errors == [0, 0, 0, 0]
