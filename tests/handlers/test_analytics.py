"""GET /analytics/structured-data: every number checked against values computed here from the
same calls, for each granularity and filter, on both databases; the range rules at their bounds."""
from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from tests.support import factories
from tests.support.client import owner

T0 = datetime(2026, 10, 30, 22, 0)  # naive UTC, as the domain takes it
# (hours after T0, call type, score, resolved, sentiment)
CALLS = [(0.25, "inbound", 2.0, True, "positive"), (1.5, "outbound", 4.0, False, "negative"),
         (1.75, "inbound", 9.0, True, "positive"), (26, "web", 10.0, True, "neutral"),
         (26.5, "inbound", -3.0, None, "positive"), (24 * 40, "inbound", 100.0, False, "positive")]


def z(moment: datetime) -> str:
    return moment.isoformat() + "Z"


@pytest.fixture
def seeded(platform):
    api = owner(platform)
    agent_id = factories.agent(api.actor, name="Billing")
    other_agent = factories.agent(api.actor, name="Sales")
    ids = {"score": factories.insight(api.actor, "score", "number", agents=[agent_id]),
           "resolved": factories.insight(api.actor, "resolved", "boolean", agents=[agent_id, other_agent]),
           "sentiment": factories.insight(api.actor, "sentiment", "enum", ["positive", "neutral", "negative"])}
    for n, (hours, call_type, score, resolved, sentiment) in enumerate(CALLS):
        values = {"score": score, "sentiment": sentiment, **({"resolved": resolved} if resolved is not None else {})}
        factories.call(api.actor, started_at=T0 + timedelta(hours=hours), call_type=call_type,
                       agent_id=agent_id if n % 2 == 0 else other_agent, structured_data=values)
    return api, ids, agent_id, other_agent


def expected_calls(start, end, call_type=None, agent=None, agents=None):
    kept = []
    for n, (hours, kind, score, resolved, sentiment) in enumerate(CALLS):
        at = T0 + timedelta(hours=hours)
        if start <= at < end and (call_type is None or kind == call_type) and \
                (agent is None or agents[n % 2] == agent):
            kept.append((at, score, resolved, sentiment))
    return kept


def bucket_of(at: datetime, granularity: str) -> datetime:
    if granularity == "hour":
        return at.replace(minute=0, second=0, microsecond=0)
    if granularity == "day":
        return at.replace(hour=0, minute=0, second=0, microsecond=0)
    return at.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def entry(result, field_id):
    return next(d for d in result["data"] if d["structuredDataId"] == field_id)


@pytest.mark.parametrize("granularity, start, end, buckets", [
    ("hour", T0, T0 + timedelta(hours=3), 3),
    ("day", T0, T0 + timedelta(days=2), 3),  # 30 Oct (from 22:00), 31 Oct, 1 Nov (until 22:00)
    ("month", T0 - timedelta(days=40), T0 + timedelta(days=45), 4),  # September to December
])
@pytest.mark.parametrize("call_type, alias", [(None, None), ("inbound", "inboundPhoneCall"), ("web", "webCall")])
def test_numbers_match_what_the_calls_hold(seeded, granularity, start, end, buckets, call_type, alias):
    api, ids, *_ = seeded
    params = {"granularity": granularity, "since": z(start), "until": z(end), **({"callType": alias} if alias else {})}
    result = api("GET", "/analytics/structured-data", **params)
    assert result["granularity"] == granularity and result["timeRange"] == {"start": z(start)[:-1] + ".000Z",
                                                                             "end": z(end)[:-1] + ".000Z"}
    kept = expected_calls(start, end, call_type)
    score = entry(result, ids["score"])
    assert len(score["timeSeries"]) == buckets
    for point in score["timeSeries"]:
        moment = datetime.fromisoformat(point["date"].replace("Z", ""))
        values = [s for at, s, _, _ in kept if bucket_of(at, granularity) == moment]
        assert point["count"] == len(values) and point["sum"] == pytest.approx(sum(values))
        assert point["min"] == (min(values) if values else None) and point["max"] == (max(values) if values else None)
        assert point["avg"] == (pytest.approx(sum(values) / len(values)) if values else None)
    values = [s for _, s, _, _ in kept]
    summary = score["summary"]
    assert summary["count"] == len(values) and summary["sum"] == pytest.approx(sum(values))
    assert summary["avg"] == (pytest.approx(sum(values) / len(values)) if values else None)
    resolved = entry(result, ids["resolved"])
    trues = sum(1 for *_, r, _ in kept if r is True)
    falses = sum(1 for *_, r, _ in kept if r is False)
    assert (resolved["summary"]["trueCount"], resolved["summary"]["falseCount"]) == (trues, falses)
    assert resolved["summary"]["trueRate"] == (pytest.approx(trues / (trues + falses)) if trues + falses else None)
    assert resolved["valueCounts"] == {"true": trues, "false": falses}
    sentiment = entry(result, ids["sentiment"])
    counts = {}
    for *_, s in kept:
        counts[s] = counts.get(s, 0) + 1
    assert sentiment["valueCounts"] == counts and sentiment["summary"]["count"] == len(kept)


def test_the_histogram_spans_min_to_max_in_ten_bins(seeded):
    api, ids, *_ = seeded
    result = api("GET", "/analytics/structured-data", since=z(T0), until=z(T0 + timedelta(days=2)))
    buckets = entry(result, ids["score"])["distribution"]["buckets"]
    values = [s for _, s, _, _ in expected_calls(T0, T0 + timedelta(days=2))]  # -3, 2, 4, 9, 10
    assert len(buckets) == 10 and buckets[0]["from"] == min(values) and buckets[-1]["to"] == max(values)
    width = (max(values) - min(values)) / 10
    for index, bucket in enumerate(buckets):
        inside = [v for v in values if min(int((v - min(values)) / width), 9) == index]
        assert bucket["count"] == len(inside), (index, bucket)
    assert entry(result, ids["sentiment"])["distribution"] == {}


def test_an_agent_filter_keeps_its_calls_and_names_it(seeded):
    api, ids, agent_id, other_agent = seeded
    start, end = T0, T0 + timedelta(days=2)
    result = api("GET", "/analytics/structured-data", since=z(start), until=z(end), agentId=other_agent)
    kept = expected_calls(start, end, agent=other_agent, agents=[agent_id, other_agent])
    assert entry(result, ids["score"])["summary"]["count"] == len(kept) == 2
    assert {f["agentName"] for f in result["fields"]} == {"Sales"}
    unfiltered = api("GET", "/analytics/structured-data", since=z(start), until=z(end))
    agents = {f["id"]: (f["agentId"], f["agentName"]) for f in unfiltered["fields"]}
    assert agents == {ids["score"]: (agent_id, "Billing"), ids["resolved"]: (None, None),
                      ids["sentiment"]: (None, None)}  # one agent, two, none


def test_some_fields_only_and_unknown_ids_are_400(seeded):
    api, ids, *_ = seeded
    result = api("GET", "/analytics/structured-data", structuredDataIds=f"{ids['sentiment']},{ids['score']}")
    assert [f["id"] for f in result["fields"]] == sorted([ids["score"], ids["sentiment"]])
    assert [d["structuredDataId"] for d in result["data"]] == [f["id"] for f in result["fields"]]
    api("GET", "/analytics/structured-data", 400, structuredDataIds="999999")


def test_the_range_defaults_to_the_last_30_days_and_its_bounds_are_checked(platform):
    api = owner(platform)
    factories.insight(api.actor, "score")
    result = api("GET", "/analytics/structured-data")
    start = datetime.fromisoformat(result["timeRange"]["start"].replace("Z", ""))
    end = datetime.fromisoformat(result["timeRange"]["end"].replace("Z", ""))
    assert end - start == timedelta(days=30) and abs(datetime.utcnow() - end) < timedelta(minutes=1)
    assert len(result["data"][0]["timeSeries"]) in (30, 31)
    assert all(p["count"] == 0 for p in result["data"][0]["timeSeries"])
    base = datetime(2026, 1, 1)
    api("GET", "/analytics/structured-data", granularity="hour", since=z(base), until=z(base + timedelta(hours=10_000)))
    too_many = api.client.get("/api/v2/analytics/structured-data", headers=api.actor.headers, params={
        "workspaceId": api.actor.workspace_id, "granularity": "hour", "since": z(base),
        "until": z(base + timedelta(hours=10_000, seconds=1))})
    assert too_many.status_code == 400 and "10000" in too_many.json()["data"]["message"]
    api("GET", "/analytics/structured-data", 400, since=z(base), until=z(base))
    api("GET", "/analytics/structured-data", 400, since=z(base), until=z(base - timedelta(seconds=1)))
    api("GET", "/analytics/structured-data", 400, granularity="week")
    api("GET", "/analytics/structured-data", 400, callType="sms")


def test_analytics_needs_analytics_read(platform):
    api = owner(platform)
    key = platform.key_actor(api.actor, permissions=["calls:read"])
    response = platform.client.get("/api/v2/analytics/structured-data", headers=key.headers,
                                   params={"workspaceId": api.actor.workspace_id})
    assert response.status_code == 403 and "analytics:read" in response.json()["data"]["message"]
