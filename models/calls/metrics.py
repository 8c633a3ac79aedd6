"""Call metrics (GET /call/metrics, and the dashboard widgets of calls): per time bucket, and per
agent when grouped, how many calls started, how many were answered and completed, their rates,
their durations (mean, median, 90th percentile) and their end reasons.

The database computes every figure, on SQLite and on PostgreSQL alike, in two statements over the
workspace's calls in the range (read along the (workspace, started_at) index): one groups the calls
by bucket (and agent), numbering each group's calls by duration with ROW_NUMBER and COUNT windows so
that the percentiles are two rows of each group weighed (linear interpolation between the closest
ranks, as PostgreSQL's percentile_cont: the median of 10, 20, 30 and 40 is 25); one counts the end
reasons of each group, keeping the 20 most frequent. Python only lays the groups out in order,
filling the buckets without calls with zeros. Buckets are in UTC, as the structured-data
analytics' (``models.calls.analytics``, whose bucket expressions and range rules these are).

What answered and completed mean is ``models.calls.end_reasons``'s reading of a call's endedReason:
answered, a call that took place (no reason of no answer, busy, voicemail, bad number or failure to
connect); completed, an answered call that ended as a conversation ends (either side hung up, or
the agent handed it on). The rates are over all the calls of the bucket.
"""
from __future__ import annotations

import functools
from datetime import datetime
from typing import NamedTuple

from models.calls import analytics, end_reasons
from models.configs.tables import Agent
from models.kernel.db import database
from models.kernel.errors import InvalidInput

GRANULARITIES = ("hour", "day", "month", "total")
GROUP_BY = ("agent",)
# Which of the call's fields the end reasons are counted by.
END_REASON_FIELDS = {"reason": "ended_reason", "category": "call_end_reason_category"}
END_REASONS_KEPT = 20
MAX_BUCKETS = analytics.MAX_BUCKETS
PERCENTILES = (50, 90)


class EndReason(NamedTuple):
    reason: str | None
    count: int


class Bucket(NamedTuple):
    start: datetime
    count: int
    answered: int
    completed: int
    duration_avg_ms: float | None
    duration_p50_ms: float | None
    duration_p90_ms: float | None
    end_reasons: list[EndReason]  # the most frequent first, at most END_REASONS_KEPT

    @property
    def answer_rate(self) -> float | None:
        return self.answered / self.count if self.count else None

    @property
    def completion_rate(self) -> float | None:
        return self.completed / self.count if self.count else None

    @property
    def other_end_reasons(self) -> int:
        """The calls whose end reason is not among those listed."""
        return self.count - sum(r.count for r in self.end_reasons)


class Series(NamedTuple):
    agent_id: str | None  # grouped: the calls' agent (None: calls without one); else the agentId filter's
    agent_name: str | None  # the agent's name when it is one of the workspace's
    buckets: list[Bucket]


class Metrics(NamedTuple):
    start: datetime
    end: datetime
    granularity: str
    group_by: str | None
    end_reasons_by: str
    series: list[Series]


class Query(NamedTuple):
    """What to measure; ``start`` and ``end`` naive UTC."""
    workspace_id: str
    start: datetime
    end: datetime
    granularity: str = "day"
    group_by: str | None = None
    agent_id: str | None = None
    call_type: str | None = None
    end_reasons_by: str = "reason"


def bucket_count(query: Query) -> int:
    """The buckets of the query's range; InvalidInput when the range is empty or spans too many."""
    if query.granularity == "total":
        if query.end <= query.start:
            raise InvalidInput("until must be later than since.")
        return 1
    return analytics.check_range(query.start, query.end, query.granularity)


def statements(query: Query) -> list[tuple[str, list]]:
    """The two statements of the query, each with its parameters: the figures by group, and the end
    reasons by group. What ``call_metrics`` runs, and what the benchmark runs bare."""
    stats, reasons = _sql(database.param, query.granularity, query.group_by, query.agent_id is not None,
                          query.call_type is not None, query.end_reasons_by)
    params = [query.workspace_id, query.start, query.end] + [v for v in (query.agent_id, query.call_type) if v is not None]
    return [(stats, params), (reasons, params)]


def call_metrics(query: Query) -> Metrics:
    """The metrics of the query: one series (grouped by agent, one per agent with calls, the most
    calls first), each with every bucket of the range. InvalidInput past MAX_BUCKETS in all."""
    buckets = bucket_count(query)
    (stats, params), (reasons, _) = statements(query)
    stat_rows = database.execute_sql(stats, params).fetchall()
    reason_rows = database.execute_sql(reasons, params).fetchall()
    found_reasons: dict[tuple, list[EndReason]] = {}
    for bucket, agent, reason, count in reason_rows:
        found_reasons.setdefault((agent, _start(bucket)), []).append(EndReason(reason, int(count)))
    found: dict[str | None, dict] = {}
    for bucket, agent, count, answered, completed, avg, p50, p90 in stat_rows:
        start = _start(bucket)
        reasons_of = sorted(found_reasons.get((agent, start), []), key=lambda r: (-r.count, r.reason or ""))
        found.setdefault(agent, {})[start] = Bucket(query.start if start is None else start, int(count),
                                                    int(answered), int(completed), float(avg), float(p50),
                                                    float(p90), reasons_of)
    if query.group_by == "agent":
        agents = sorted(found, key=lambda a: (-sum(b.count for b in found[a].values()), a is None, a or ""))
        if buckets * len(agents) > MAX_BUCKETS:
            raise InvalidInput(f"The answer would hold {buckets} buckets for each of {len(agents)} agents; at most "
                               f"{MAX_BUCKETS} buckets in all are allowed: narrow the range, take a coarser "
                               "granularity, or filter by agentId.")
    else:
        agents = [query.agent_id]
        found = {query.agent_id: next(iter(found.values()), {})}
    names = _agent_names(query.workspace_id, [a for a in agents if a is not None])
    series = [Series(agent, names.get(agent), _laid_out(query, found[agent])) for agent in agents]
    return Metrics(query.start, query.end, query.granularity, query.group_by, query.end_reasons_by, series)


def _start(bucket) -> datetime | None:
    return None if bucket is None else analytics.as_datetime(bucket)


def _laid_out(query: Query, found: dict) -> list[Bucket]:
    """Every bucket of the range in order, those without calls empty."""
    if query.granularity == "total":
        return [found.get(None) or _empty(query.start)]
    buckets, moment = [], analytics.floor(query.start, query.granularity)
    while moment < query.end:
        buckets.append(found.get(moment) or _empty(moment))
        moment = analytics.following(moment, query.granularity)
    return buckets


def _empty(start: datetime) -> Bucket:
    return Bucket(start, 0, 0, 0, None, None, None, [])


def _agent_names(workspace_id: str, agent_ids: list[str]) -> dict[str, str]:
    """The names of those of ``agent_ids`` that are agents of the workspace (a report may name any id)."""
    if not agent_ids:
        return {}
    return dict(Agent.in_workspace(workspace_id, Agent.id, Agent.name).where(Agent.id.in_(agent_ids)).tuples())


def _quoted(values) -> str:
    return ", ".join(f"'{value}'" for value in sorted(values))


def _percentile(k: int, p: str) -> str:
    """The k-th percentile of each group's durations, from each row's rank (rn) and its group's size
    (n): at 0-based position (n - 1) * k / 100, the rows either side weighed by how near it falls.
    Integer arithmetic, which both databases do alike (a cast of a real to an integer does not)."""
    mod = "%%" if p == "%s" else "%"  # the driver's placeholders make a % of PostgreSQL's SQL %%
    return (f"SUM(CASE WHEN rn = (n - 1) * {k} / 100 + 1 THEN d * (100 - (n - 1) * {k} {mod} 100) / 100.0 "
            f"WHEN rn = (n - 1) * {k} / 100 + 2 THEN d * ((n - 1) * {k} {mod} 100) / 100.0 ELSE 0 END)")


@functools.cache
def _sql(p: str, granularity: str, group_by: str | None, by_agent: bool, by_type: bool,
         end_reasons_by: str) -> tuple[str, str]:
    bucket = "NULL" if granularity == "total" else analytics.bucket_sql(granularity)
    agent = "agent_id" if group_by == "agent" else "NULL"
    parts = [e for e in (bucket, agent) if e != "NULL"]
    partition = f"PARTITION BY {', '.join(parts)} " if parts else ""
    where = " AND ".join([f"workspace_id = {p}", f"started_at >= {p}", f"started_at < {p}"]
                         + ([f"agent_id = {p}"] if by_agent else []) + ([f"call_type = {p}"] if by_type else []))
    reason_key = "LOWER(TRIM(COALESCE(ended_reason, '')))"
    stats = (
        f"WITH c AS (SELECT {bucket} AS bucket, {agent} AS agent, duration_ms AS d, "
        f"CASE WHEN {reason_key} IN ({_quoted(end_reasons.UNREACHED)}) THEN 0 ELSE 1 END AS answered, "
        f"CASE WHEN {reason_key} IN ({_quoted(end_reasons.ENDED_BY_A_PARTY)}) THEN 1 ELSE 0 END AS completed, "
        f"ROW_NUMBER() OVER ({partition}ORDER BY duration_ms) AS rn, COUNT(*) OVER ({partition.strip()}) AS n "
        f"FROM call WHERE {where}) "
        f"SELECT bucket, agent, COUNT(*), SUM(answered), SUM(completed), AVG(d), "
        f"{', '.join(_percentile(k, p) for k in PERCENTILES)} FROM c GROUP BY bucket, agent")
    reason = END_REASON_FIELDS[end_reasons_by]
    reasons = (
        f"SELECT bucket, agent, reason, n FROM (SELECT {bucket} AS bucket, {agent} AS agent, {reason} AS reason, "
        f"COUNT(*) AS n, ROW_NUMBER() OVER ({partition}ORDER BY COUNT(*) DESC, COALESCE({reason}, '')) AS rank "
        f"FROM call WHERE {where} GROUP BY {', '.join([*parts, reason])}) AS counted "
        f"WHERE rank <= {END_REASONS_KEPT}")
    return stats, reasons
