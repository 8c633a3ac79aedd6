"""Structured-data analytics (GET /analytics/structured-data): per field, a time series in UTC
buckets, a summary, a histogram of numbers and the counts of text values.

The database does the grouping, on SQLite and on PostgreSQL alike: one statement groups the values
by field and bucket, one counts the text values (the 100 most frequent per field), one bins the
numbers into ten equal-width buckets between each field's minimum and maximum. What Python adds up
afterwards are those groups (at most 10,000 buckets per field), never the values themselves: the
summary is the sum of the buckets, and the empty buckets between them are filled in with count 0.
The statements read call_value alone, along its (workspace, field, started_at) index; the call's
start, agent and type were copied there when the value was stored.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import NamedTuple

from models.calls.tables import AgentInsight, StructuredField
from models.configs.tables import Agent
from models.kernel.db import database, is_postgres
from models.kernel.errors import InvalidInput
from models.kernel.scoping import same_workspace

GRANULARITIES = ("hour", "day", "month")
MAX_BUCKETS = 10_000
VALUE_COUNTS_KEPT = 100
HISTOGRAM_BINS = 10


class FieldInfo(NamedTuple):
    id: int
    name: str
    type: str
    agent_id: str | None
    agent_name: str | None


class Bucket(NamedTuple):
    start: datetime
    count: int
    sum: float
    min: float | None
    max: float | None
    numbers: int
    true_count: int
    false_count: int

    @property
    def avg(self) -> float | None:
        """The mean of the bucket's numbers; None without any."""
        return self.sum / self.numbers if self.numbers else None


class Summary(NamedTuple):
    """A field's figures over the whole range: the buckets added up."""
    count: int
    avg: float | None
    sum: float
    min: float | None
    max: float | None
    true_count: int
    false_count: int
    true_rate: float | None


class FieldAnalytics(NamedTuple):
    field: FieldInfo
    series: list[Bucket]
    histogram: list[tuple[float, float, int]]  # (from, to, count)
    value_counts: dict[str, int]

    def summary(self) -> Summary:
        numbers = sum(b.numbers for b in self.series)
        total = sum(b.sum for b in self.series)
        mins = [b.min for b in self.series if b.min is not None]
        maxes = [b.max for b in self.series if b.max is not None]
        true_count = sum(b.true_count for b in self.series)
        false_count = sum(b.false_count for b in self.series)
        answered = true_count + false_count
        return Summary(sum(b.count for b in self.series), total / numbers if numbers else None, total,
                       min(mins) if mins else None, max(maxes) if maxes else None, true_count, false_count,
                       true_count / answered if answered else None)

    def counts(self) -> dict[str, int]:
        """How often each value came: a boolean's true and false, another type's values."""
        if self.field.type == "boolean":
            summary = self.summary()
            return {"true": summary.true_count, "false": summary.false_count}
        return self.value_counts


class Analytics(NamedTuple):
    start: datetime
    end: datetime
    granularity: str
    fields: list[FieldAnalytics]


def floor(moment: datetime, granularity: str) -> datetime:
    if granularity == "hour":
        return moment.replace(minute=0, second=0, microsecond=0)
    if granularity == "day":
        return moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def following(moment: datetime, granularity: str) -> datetime:
    if granularity == "hour":
        return moment + timedelta(hours=1)
    if granularity == "day":
        return moment + timedelta(days=1)
    year, month = (moment.year + 1, 1) if moment.month == 12 else (moment.year, moment.month + 1)
    return moment.replace(year=year, month=month)


def bucket_count(start: datetime, end: datetime, granularity: str) -> int:
    """How many buckets [start, end) touches."""
    first = floor(start, granularity)
    if granularity == "hour":
        return -(-int((end - first).total_seconds()) // 3600)
    if granularity == "day":
        return -(-int((end - first).total_seconds()) // 86400)
    months = (end.year - first.year) * 12 + end.month - first.month
    return months + (1 if end > floor(end, "month") else 0)


def check_range(start: datetime, end: datetime, granularity: str) -> int:
    """The number of buckets of [start, end); InvalidInput when end is not after start or past MAX_BUCKETS."""
    if end <= start:
        raise InvalidInput("until must be later than since.")
    buckets = bucket_count(start, end, granularity)
    if buckets > MAX_BUCKETS:
        raise InvalidInput(f"The range from since to until spans {buckets} {granularity} buckets; at most "
                           f"{MAX_BUCKETS} are allowed: narrow the range or take a coarser granularity.")
    return buckets


def bucket_sql(granularity: str) -> str:
    """The SQL of the start of the bucket a row's started_at falls in (naive UTC, as stored)."""
    if is_postgres():
        return f"date_trunc('{granularity}', started_at)"
    pattern = {"hour": "%Y-%m-%d %H:00:00", "day": "%Y-%m-%d 00:00:00", "month": "%Y-%m-01 00:00:00"}[granularity]
    return f"strftime('{pattern}', started_at)"


def as_datetime(value) -> datetime:
    """A bucket's start as the driver gives it (SQLite: text) as a datetime."""
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)


def structured_data(*, workspace_id: str, start: datetime, end: datetime, granularity: str,
                    call_type: str | None = None, agent_id: str | None = None,
                    field_ids: list[int] | None = None) -> Analytics:
    """``start`` and ``end`` naive UTC, end after start; a call counts in the bucket it started in."""
    check_range(start, end, granularity)
    fields = _fields(workspace_id, agent_id, field_ids)
    if not fields:
        return Analytics(start, end, granularity, [])
    p = database.param
    params: list = [workspace_id, *[f.id for f in fields], start, end]
    params += [value for value in (call_type, agent_id) if value is not None]

    def condition(table: str = "") -> str:
        return " AND ".join([f"{table}workspace_id = {p}", f"{table}field_id IN ({', '.join([p] * len(fields))})",
                             f"{table}started_at >= {p}", f"{table}started_at < {p}"]
                            + ([f"{table}call_type = {p}"] if call_type is not None else [])
                            + ([f"{table}agent_id = {p}"] if agent_id is not None else []))

    bucket = bucket_sql(granularity)
    series_rows = database.execute_sql(
        f"SELECT field_id, {bucket} AS bucket, COUNT(*), COALESCE(SUM(number_value), 0), MIN(number_value), "
        f"MAX(number_value), COUNT(number_value), "
        f"SUM(CASE WHEN boolean_value THEN 1 ELSE 0 END), SUM(CASE WHEN NOT boolean_value THEN 1 ELSE 0 END) "
        f"FROM call_value WHERE {condition()} GROUP BY field_id, {bucket}", params).fetchall()
    count_rows = database.execute_sql(
        f"SELECT field_id, text_value, n FROM (SELECT field_id, text_value, COUNT(*) AS n, ROW_NUMBER() OVER "
        f"(PARTITION BY field_id ORDER BY COUNT(*) DESC, text_value) AS rank FROM call_value "
        f"WHERE {condition()} AND text_value IS NOT NULL GROUP BY field_id, text_value) AS counted "
        f"WHERE rank <= {VALUE_COUNTS_KEPT}", params).fetchall()
    bin_of = (f"FLOOR((v.number_value - s.lo) * {HISTOGRAM_BINS} / (s.hi - s.lo))" if is_postgres()
              else f"CAST((v.number_value - s.lo) * {HISTOGRAM_BINS} / (s.hi - s.lo) AS INTEGER)")
    histogram_rows = database.execute_sql(
        f"WITH s AS (SELECT field_id, MIN(number_value) AS lo, MAX(number_value) AS hi FROM call_value "
        f"WHERE {condition()} AND number_value IS NOT NULL GROUP BY field_id) "
        f"SELECT v.field_id, s.lo, s.hi, CASE WHEN s.hi = s.lo THEN 0 ELSE {bin_of} END AS bin, COUNT(*) "
        f"FROM call_value v JOIN s ON s.field_id = v.field_id WHERE {condition('v.')} AND v.number_value IS NOT NULL "
        f"GROUP BY v.field_id, s.lo, s.hi, bin", params + params).fetchall()
    return Analytics(start, end, granularity,
                     [_assemble(f, start, end, granularity, series_rows, count_rows, histogram_rows) for f in fields])


def _assemble(field: FieldInfo, start, end, granularity, series_rows, count_rows, histogram_rows) -> FieldAnalytics:
    found = {as_datetime(row[1]): row for row in series_rows if row[0] == field.id}
    series, moment = [], floor(start, granularity)
    while moment < end:
        row = found.get(moment)
        series.append(Bucket(moment, 0, 0.0, None, None, 0, 0, 0) if row is None else
                      Bucket(moment, row[2], float(row[3]), row[4], row[5], row[6], int(row[7] or 0), int(row[8] or 0)))
        moment = following(moment, granularity)
    bins: dict[int, int] = {}
    lo = hi = None
    for field_id, low, high, index, count in histogram_rows:
        if field_id == field.id:
            lo, hi = low, high
            index = min(int(index), HISTOGRAM_BINS - 1)  # the maximum itself falls in the last bin
            bins[index] = bins.get(index, 0) + count
    histogram = []
    if lo is not None:
        width = (hi - lo) / HISTOGRAM_BINS
        histogram = ([(lo, hi, bins.get(0, 0))] if hi == lo else
                     [(lo + i * width, hi if i == HISTOGRAM_BINS - 1 else lo + (i + 1) * width, bins.get(i, 0))
                      for i in range(HISTOGRAM_BINS)])
    counts = {text: n for field_id, text, n in count_rows if field_id == field.id}
    return FieldAnalytics(field, series, histogram, counts)


def _fields(workspace_id: str, agent_id: str | None, field_ids: list[int] | None) -> list[FieldInfo]:
    """The fields analysed (all of the workspace's, or those named), each with its agent: the
    agent filter's, else the one agent it is assigned to (agent insights), else none."""
    query = StructuredField.in_workspace(workspace_id, StructuredField.id, StructuredField.name, StructuredField.type)
    if field_ids:
        query = query.where(StructuredField.id.in_(field_ids))
    rows = list(query.order_by(StructuredField.id).tuples())
    if field_ids:
        missing = sorted(set(field_ids) - {row[0] for row in rows})
        if missing:
            raise InvalidInput(f"structuredDataIds name no field of this workspace: {', '.join(map(str, missing))}.")
    if not rows:
        return []
    if agent_id is not None:
        named = Agent.in_workspace(workspace_id, Agent.name).where(Agent.id == agent_id).tuples().first()
        return [FieldInfo(*row, agent_id, named[0] if named else None) for row in rows]
    assigned: dict[int, list[tuple[str, str]]] = {}
    query = (AgentInsight.in_workspace(workspace_id, AgentInsight.field, AgentInsight.agent, Agent.name)
             .join(Agent, on=same_workspace(Agent.id == AgentInsight.agent, Agent, AgentInsight)).where(AgentInsight.field.in_([row[0] for row in rows])))
    for field_id, agent, name in query.tuples():
        assigned.setdefault(field_id, []).append((agent, name))
    return [FieldInfo(*row, *(agents[0] if len(agents := assigned.get(row[0], [])) == 1 else (None, None)))
            for row in rows]
