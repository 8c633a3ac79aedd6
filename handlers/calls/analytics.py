"""The analytics group: getStructuredDataAnalytics, in the result's documented shape (which dashboard
widgets of structured data answer too)."""
from __future__ import annotations

from datetime import timedelta

from api.envelope import ok
from handlers.wire import iso, naive_utc
from models.calls import analytics
from models.calls.analytics import Analytics, FieldAnalytics
from models.kernel.db import utcnow

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
    return ok(analytics_shape(workspaceId, result))


def analytics_shape(workspace_id: str, result: Analytics) -> dict:
    """The analytics as the wire writes them (dashboard widgets of structured data answer them too)."""
    return {
        "workspaceId": workspace_id,
        "timeRange": {"start": iso(result.start), "end": iso(result.end)},
        "granularity": result.granularity,
        "fields": [{"id": f.field.id, "name": f.field.name, "type": f.field.type, "agentId": f.field.agent_id,
                    "agentName": f.field.agent_name} for f in result.fields],
        "data": [_entry(f) for f in result.fields],
        "generatedAt": iso(utcnow()),
    }


def _entry(f: FieldAnalytics) -> dict:
    summary = f.summary()
    return {
        "structuredDataId": f.field.id,
        "timeSeries": [{"date": iso(b.start), "count": b.count, "avg": b.avg, "sum": b.sum, "min": b.min, "max": b.max,
                        "trueCount": b.true_count, "falseCount": b.false_count} for b in f.series],
        "summary": {"count": summary.count, "avg": summary.avg, "sum": summary.sum, "min": summary.min,
                    "max": summary.max, "trueCount": summary.true_count, "falseCount": summary.false_count,
                    "trueRate": summary.true_rate},
        "distribution": {"buckets": [{"from": lo, "to": hi, "count": n} for lo, hi, n in f.histogram]}
        if f.histogram else {},
        "valueCounts": f.counts(),
    }
