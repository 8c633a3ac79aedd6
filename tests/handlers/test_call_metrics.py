"""GET /call/metrics: every figure checked against a computation made here over a small fixed set of
calls (counts, answered and completed, rates, the mean and the percentiles at odd and even counts,
end reasons), for each granularity, grouped by agent and filtered; bucket edges at midnight and at
month ends; buckets in UTC whatever the workspace's time zone; the bound of 10,000 buckets at it and
just past it; another workspace's agent as a filter."""
from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from tests.support import factories
from tests.support.client import owner

A, B = "agent A", "agent B"
# (start, duration ms, endedReason, agent, call type, callEndReasonCategory)
CALLS = [
    (datetime(2026, 1, 31, 12, 0), 5_000, "Customer-Did-Not-Answer ", B, "outbound", "no-answer"),
    (datetime(2026, 1, 31, 23, 59, 59, 999000), 10_000, "customer-ended-call", A, "inbound", "customer"),
    (datetime(2026, 2, 1, 0, 0), 20_000, "voicemail", B, "outbound", "voicemail"),
    (datetime(2026, 2, 1, 0, 30), 30_000, "silence-timed-out", A, "inbound", "system"),
    (datetime(2026, 2, 1, 0, 45), 40_000, None, None, "web", None),
    (datetime(2026, 2, 1, 13, 0), 50_000, "assistant-ended-call", A, "inbound", "assistant"),
    (datetime(2026, 2, 28, 23, 0), 70_000, "customer-ended-call", A, "inbound", "customer"),
    (datetime(2026, 3, 1, 0, 0), 80_000, "assistant-forwarded-call", B, "inbound", None),
]
UNREACHED = {"customer-did-not-answer", "voicemail"}
ENDED_BY_A_PARTY = {"customer-ended-call", "assistant-ended-call", "assistant-forwarded-call"}
SINCE, UNTIL = datetime(2026, 1, 31, 0, 0), datetime(2026, 3, 2, 0, 0)


def z(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds") + "Z"


@pytest.fixture
def seeded(platform):
    api = owner(platform)
    agents = {A: factories.agent(api.actor, name="Billing"), B: factories.agent(api.actor, name="Sales")}
    for started, duration, reason, agent, call_type, category in CALLS:
        factories.call(api.actor, started_at=started, duration_ms=float(duration), ended_reason=reason,
                       agent_id=agents.get(agent), call_type=call_type, call_end_reason_category=category)
    return api, agents


def metrics(api, expect: int = 200, **params):
    params.setdefault("since", z(SINCE))
    params.setdefault("until", z(UNTIL))
    return api("GET", "/call/metrics", expect, **params)


# --- the hand computation -----------------------------------------------------------------------

def percentile(values: list[float], k: int) -> float:
    """Linear interpolation between the closest ranks."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * k / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def bucket_of(at: datetime, granularity: str) -> datetime:
    if granularity == "total":
        return SINCE
    if granularity == "hour":
        return at.replace(minute=0, second=0, microsecond=0)
    if granularity == "day":
        return at.replace(hour=0, minute=0, second=0, microsecond=0)
    return at.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def expected(calls, by: str = "reason") -> dict:
    durations = [c[1] for c in calls]
    reason_of = (lambda c: c[2]) if by == "reason" else (lambda c: c[5])
    answered = [c for c in calls if (c[2] or "").strip().lower() not in UNREACHED]
    completed = [c for c in calls if (c[2] or "").strip().lower() in ENDED_BY_A_PARTY]
    counts: dict = {}
    for c in calls:
        counts[reason_of(c)] = counts.get(reason_of(c), 0) + 1
    if not calls:
        return {"count": 0, "answered": 0, "completed": 0, "answerRate": None, "completionRate": None,
                "durationMs": {"avg": None, "p50": None, "p90": None}, "endReasons": [], "otherEndReasons": 0}
    return {"count": len(calls), "answered": len(answered), "completed": len(completed),
            "answerRate": pytest.approx(len(answered) / len(calls)),
            "completionRate": pytest.approx(len(completed) / len(calls)),
            "durationMs": {"avg": pytest.approx(sum(durations) / len(durations)),
                           "p50": pytest.approx(percentile(durations, 50)),
                           "p90": pytest.approx(percentile(durations, 90))},
            "endReasons": [{"reason": r, "count": n}
                           for r, n in sorted(counts.items(), key=lambda i: (-i[1], i[0] or ""))],
            "otherEndReasons": 0}


def check(buckets: list[dict], calls, granularity: str, by: str = "reason") -> None:
    for bucket in buckets:
        start = datetime.fromisoformat(bucket["start"][:-1])
        inside = [c for c in calls if bucket_of(c[0], granularity) == start]
        assert {k: v for k, v in bucket.items() if k != "start"} == expected(inside, by), bucket["start"]
    assert sum(b["count"] for b in buckets) == len(calls)


# --- figures -------------------------------------------------------------------------------------

@pytest.mark.parametrize("granularity, buckets", [("hour", 30 * 24), ("day", 30), ("month", 3), ("total", 1)])
def test_every_granularity_matches_the_hand_computation(seeded, granularity, buckets):
    api, _ = seeded
    result = metrics(api, granularity=granularity)
    assert (result["granularity"], result["groupBy"], result["endReasonsBy"]) == (granularity, None, "reason")
    assert result["timeRange"] == {"start": z(SINCE), "end": z(UNTIL)}
    [series] = result["series"]
    assert (series["agentId"], series["agentName"]) == (None, None)
    assert len(series["buckets"]) == buckets
    starts = [b["start"] for b in series["buckets"]]
    assert starts == sorted(starts) and starts[0] == z(SINCE if granularity != "month" else datetime(2026, 1, 1))
    check(series["buckets"], CALLS, granularity)


def test_percentiles_interpolate_at_even_and_odd_counts(seeded):
    api, _ = seeded
    by_day = {b["start"]: b for b in metrics(api, granularity="day")["series"][0]["buckets"]}
    # 31 January: 5 and 10 s (two: the mean of the middle ones); 1 February: 20, 30, 40 and 50 s.
    assert by_day[z(datetime(2026, 1, 31))]["durationMs"] == {"avg": 7500, "p50": 7500, "p90": 9500}
    assert by_day[z(datetime(2026, 2, 1))]["durationMs"] == {"avg": 35000, "p50": 35000, "p90": 47000}
    # Midnight's hour of 1 February: 20, 30 and 40 s (three: the middle one).
    by_hour = {b["start"]: b for b in metrics(api, granularity="hour")["series"][0]["buckets"]}
    assert by_hour[z(datetime(2026, 2, 1))]["durationMs"] == {"avg": 30000, "p50": 30000, "p90": 38000}
    # One call: each figure is its duration.
    assert by_hour[z(datetime(2026, 2, 1, 13))]["durationMs"] == {"avg": 50000, "p50": 50000, "p90": 50000}
    [total] = metrics(api, granularity="total")["series"][0]["buckets"]
    assert total["durationMs"] == {"avg": 38125, "p50": 35000, "p90": 73000}


def test_answered_and_completed_are_read_from_the_end_reason(seeded):
    api, _ = seeded
    [total] = metrics(api, granularity="total")["series"][0]["buckets"]
    # Not answered: no answer (whatever its case and spaces), voicemail. Completed: ended by either
    # side or forwarded; silence and no reason at all are answered, not completed.
    assert (total["count"], total["answered"], total["completed"]) == (8, 6, 4)
    assert (total["answerRate"], total["completionRate"]) == (0.75, 0.5)
    by_day = {b["start"]: b for b in metrics(api, granularity="day")["series"][0]["buckets"]}
    feb_1 = by_day[z(datetime(2026, 2, 1))]
    assert (feb_1["count"], feb_1["answered"], feb_1["completed"], feb_1["answerRate"]) == (4, 3, 1, 0.75)
    empty = by_day[z(datetime(2026, 2, 2))]
    assert empty == {"start": z(datetime(2026, 2, 2)), "count": 0, "answered": 0, "completed": 0, "answerRate": None,
                     "completionRate": None, "durationMs": {"avg": None, "p50": None, "p90": None},
                     "endReasons": [], "otherEndReasons": 0}


def test_buckets_split_at_midnight_and_at_month_ends(seeded):
    api, _ = seeded
    by_day = {b["start"]: b["count"] for b in metrics(api, granularity="day")["series"][0]["buckets"]}
    # 23:59:59.999 is the last moment of 31 January; midnight the first of 1 February.
    assert by_day[z(datetime(2026, 1, 31))] == 2 and by_day[z(datetime(2026, 2, 1))] == 4
    assert by_day[z(datetime(2026, 2, 28))] == 1 and by_day[z(datetime(2026, 3, 1))] == 1
    by_month = {b["start"]: b["count"] for b in metrics(api, granularity="month")["series"][0]["buckets"]}
    assert by_month == {z(datetime(2026, 1, 1)): 2, z(datetime(2026, 2, 1)): 5, z(datetime(2026, 3, 1)): 1}
    # since and until bound the calls' starts: [since, until).
    edge = metrics(api, granularity="total", since=z(datetime(2026, 2, 1)), until=z(datetime(2026, 3, 1)))
    assert edge["series"][0]["buckets"][0]["count"] == 5
    just_before = metrics(api, granularity="total", since=z(datetime(2026, 1, 31, 23, 59, 59, 999000)),
                          until=z(datetime(2026, 2, 1)))
    assert just_before["series"][0]["buckets"][0]["count"] == 1


def test_buckets_are_in_utc_whatever_the_workspace_time_zone(seeded, platform):
    api, _ = seeded
    before = metrics(api, granularity="day")["series"]
    response = platform.client.patch("/api/v2/workspace", params={"workspaceId": api.actor.workspace_id},
                                     headers=api.actor.headers, json={"settings": {"timeZone": "Pacific/Auckland"}})
    assert response.status_code == 200, response.text
    assert metrics(api, granularity="day")["series"] == before
    # An offset in since and until is a moment; the buckets stay those of UTC days.
    local = metrics(api, granularity="day", since="2026-01-31T13:00:00+13:00", until="2026-02-02T13:00:00+13:00")
    assert local["timeRange"] == {"start": z(SINCE), "end": z(datetime(2026, 2, 2))}
    assert [b["start"] for b in local["series"][0]["buckets"]] == [z(SINCE), z(datetime(2026, 2, 1))]


def test_grouped_by_agent_each_agent_has_its_series_most_calls_first(seeded):
    api, agents = seeded
    for granularity in ("day", "total"):
        result = metrics(api, granularity=granularity, groupBy="agent")
        assert result["groupBy"] == "agent"
        assert [(s["agentId"], s["agentName"]) for s in result["series"]] == [
            (agents[A], "Billing"), (agents[B], "Sales"), (None, None)]
        for series in result["series"]:
            name = next((n for n, i in agents.items() if i == series["agentId"]), None)
            check(series["buckets"], [c for c in CALLS if c[3] == name], granularity)


def test_filters_keep_one_agent_and_one_call_type(seeded):
    api, agents = seeded
    result = metrics(api, granularity="day", agentId=agents[B])
    [series] = result["series"]
    assert (series["agentId"], series["agentName"]) == (agents[B], "Sales")
    check(series["buckets"], [c for c in CALLS if c[3] == B], "day")
    [series] = metrics(api, granularity="month", callType="inbound")["series"]
    check(series["buckets"], [c for c in CALLS if c[4] == "inbound"], "month")
    [series] = metrics(api, granularity="total", callType="outbound", agentId=agents[A])["series"]
    assert series["buckets"][0]["count"] == 0


def test_another_workspaces_agent_as_a_filter_finds_nothing(seeded, platform):
    api, agents = seeded
    other = owner(platform)
    foreign = factories.agent(other.actor, name="Their agent")
    factories.call(other.actor, started_at=datetime(2026, 2, 1, 10), agent_id=foreign)
    # Another workspace's agent finds nothing here, and its name is not shown; nor does our agent find
    # anything there.
    [series] = metrics(api, granularity="total", agentId=foreign)["series"]
    assert (series["agentId"], series["agentName"], series["buckets"][0]["count"]) == (foreign, None, 0)
    [series] = metrics(other, granularity="total", agentId=agents[A])["series"]
    assert (series["agentName"], series["buckets"][0]["count"]) == (None, 0)
    [series] = metrics(other, granularity="total", groupBy="agent")["series"]
    assert (series["agentId"], series["agentName"], series["buckets"][0]["count"]) == (foreign, "Their agent", 1)


def test_end_reasons_by_reason_or_by_category(seeded):
    api, _ = seeded
    [total] = metrics(api, granularity="total", endReasonsBy="category")["series"][0]["buckets"]
    assert total["endReasons"] == [{"reason": None, "count": 2}, {"reason": "customer", "count": 2},
                                   {"reason": "assistant", "count": 1}, {"reason": "no-answer", "count": 1},
                                   {"reason": "system", "count": 1}, {"reason": "voicemail", "count": 1}]
    for granularity in ("day", "total"):
        result = metrics(api, granularity=granularity, endReasonsBy="category")
        assert result["endReasonsBy"] == "category"
        check(result["series"][0]["buckets"], CALLS, granularity, by="category")
    [total] = metrics(api, granularity="total")["series"][0]["buckets"]
    assert total["endReasons"][0] == {"reason": "customer-ended-call", "count": 2}


def test_the_20_most_frequent_end_reasons_are_listed_and_the_others_counted(platform):
    api = owner(platform)
    start = datetime(2026, 5, 1, 10)
    for n in range(22):
        for _ in range(2 if n < 2 else 1):
            factories.call(api.actor, started_at=start + timedelta(minutes=n), ended_reason=f"reason-{n:02d}")
    [bucket] = metrics(api, granularity="total", since=z(start), until=z(start + timedelta(hours=1)))[
        "series"][0]["buckets"]
    assert bucket["count"] == 24 and len(bucket["endReasons"]) == 20
    assert bucket["endReasons"][:3] == [{"reason": "reason-00", "count": 2}, {"reason": "reason-01", "count": 2},
                                        {"reason": "reason-02", "count": 1}]
    assert bucket["endReasons"][-1] == {"reason": "reason-19", "count": 1} and bucket["otherEndReasons"] == 2


# --- the range -----------------------------------------------------------------------------------

def test_at_most_10000_buckets(seeded):
    api, _ = seeded
    start = datetime(2026, 1, 1)
    result = metrics(api, granularity="hour", since=z(start), until=z(start + timedelta(hours=10_000)))
    assert len(result["series"][0]["buckets"]) == 10_000
    assert sum(b["count"] for b in result["series"][0]["buckets"]) == len(CALLS)
    error = metrics(api, 400, granularity="hour", since=z(start), until=z(start + timedelta(hours=10_000, seconds=1)))
    assert error["code"] == "validation_failed" and "10001 hour buckets; at most 10000" in error["message"]
    # Grouped by agent, the buckets of every series count: three series of 3,333 buckets, not of 3,334.
    assert len(metrics(api, granularity="hour", groupBy="agent", since=z(start),
                       until=z(start + timedelta(hours=3_333)))["series"]) == 3
    error = metrics(api, 400, granularity="hour", groupBy="agent", since=z(start),
                    until=z(start + timedelta(hours=3_334)))
    assert "3334 buckets for each of 3 agents" in error["message"]
    # total is one bucket, whatever the range.
    assert len(metrics(api, granularity="total", since="0001-01-01T00:00:00Z", until="9999-01-01T00:00:00Z")[
        "series"][0]["buckets"]) == 1


def test_the_range_is_since_to_until_the_last_30_days_by_default(seeded):
    api, _ = seeded
    assert "until must be later than since" in metrics(api, 400, since=z(UNTIL), until=z(SINCE))["message"]
    assert "until must be later than since" in metrics(api, 400, since=z(SINCE), until=z(SINCE))["message"]
    assert "since" in metrics(api, 400, since="2026-01-31T00:00:00")["message"]  # no offset
    result = api("GET", "/call/metrics")
    start, end = (datetime.fromisoformat(result["timeRange"][k][:-1]) for k in ("start", "end"))
    assert end - start == timedelta(days=30) and result["granularity"] == "day"
    assert len(result["series"][0]["buckets"]) == 31 and sum(b["count"] for b in result["series"][0]["buckets"]) == 0
    for name, value in (("granularity", "week"), ("groupBy", "type"), ("callType", "sms"), ("agentId", "nope"),
                        ("endReasonsBy", "status")):
        assert name in metrics(api, 400, **{name: value})["message"]
