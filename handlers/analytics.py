"""The analytics group: getStructuredDataAnalytics, in the result's documented shape."""
from __future__ import annotations

from datetime import timedelta

from api.envelope import ok
from models import analytics
from models.analytics import FieldAnalytics
from models.db import utcnow

from .wire import iso, naive_utc

# The documented call types: the last three are the first three under other names.
CALL_TYPE_ALIASES = {"inboundPhoneCall": "inbound", "outboundPhoneCall": "outbound", "webCall": "web"}
DEFAULT_DAYS = 30


def get_structured_data_analytics(workspaceId: str, granularity: str = "day", callType=None, since=None, until=None,
                                  agentId=None, structuredDataIds=None):
    end_at = naive_utc(until, "until") if until is not None else utcnow()
    start_at = naive_utc(since, "since") if since is not None else end_at - timedelta(days=DEFAULT_DAYS)
    result = analytics.structured_data(
        workspace_id=workspaceId, start=start_at, end=end_at, granularity=granularity,
        call_type=CALL_TYPE_ALIASES.get(callType, callType), agent_id=agentId, field_ids=structuredDataIds)
    return ok({
        "workspaceId": workspaceId,
        "timeRange": {"start": iso(result.start), "end": iso(result.end)},
        "granularity": result.granularity,
        "fields": [{"id": f.field.id, "name": f.field.name, "type": f.field.type, "agentId": f.field.agent_id,
                    "agentName": f.field.agent_name} for f in result.fields],
        "data": [_entry(f) for f in result.fields],
        "generatedAt": iso(utcnow()),
    })


def _entry(f: FieldAnalytics) -> dict:
    count = sum(b.count for b in f.series)
    numbers = sum(b.numbers for b in f.series)
    total = sum(b.sum for b in f.series)
    mins = [b.min for b in f.series if b.min is not None]
    maxes = [b.max for b in f.series if b.max is not None]
    true_count = sum(b.true_count for b in f.series)
    false_count = sum(b.false_count for b in f.series)
    if f.field.type == "boolean":
        value_counts = {"true": true_count, "false": false_count}
    else:
        value_counts = f.value_counts
    return {
        "structuredDataId": f.field.id,
        "timeSeries": [{"date": iso(b.start), "count": b.count, "avg": b.sum / b.numbers if b.numbers else None,
                        "sum": b.sum, "min": b.min, "max": b.max, "trueCount": b.true_count,
                        "falseCount": b.false_count} for b in f.series],
        "summary": {"count": count, "avg": total / numbers if numbers else None, "sum": total,
                    "min": min(mins) if mins else None, "max": max(maxes) if maxes else None,
                    "trueCount": true_count, "falseCount": false_count,
                    "trueRate": true_count / (true_count + false_count) if true_count + false_count else None},
        "distribution": {"buckets": [{"from": lo, "to": hi, "count": n} for lo, hi, n in f.histogram]}
        if f.histogram else {},
        "valueCounts": value_counts,
    }
