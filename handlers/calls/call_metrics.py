"""The call metrics group: getCallMetrics, and the metrics' wire shape (dashboard widgets of calls
answer it too)."""
from __future__ import annotations

from datetime import timedelta

from api.envelope import ok
from handlers.wire import iso, naive_utc
from models.calls import metrics
from models.calls.metrics import Bucket, Metrics
from models.kernel.db import utcnow

DEFAULT_DAYS = 30


def get_call_metrics(workspaceId: str, since=None, until=None, granularity: str = "day", groupBy=None, agentId=None,
                     callType=None, endReasonsBy: str = "reason"):
    end = naive_utc(until, "until") if until is not None else utcnow()
    start = naive_utc(since, "since") if since is not None else end - timedelta(days=DEFAULT_DAYS)
    result = metrics.call_metrics(metrics.Query(workspaceId, start, end, granularity, groupBy, agentId, callType,
                                                endReasonsBy))
    return ok(metrics_shape(workspaceId, result))


def metrics_shape(workspace_id: str, result: Metrics) -> dict:
    return {
        "workspaceId": workspace_id,
        "timeRange": {"start": iso(result.start), "end": iso(result.end)},
        "granularity": result.granularity,
        "groupBy": result.group_by,
        "endReasonsBy": result.end_reasons_by,
        "series": [{"agentId": s.agent_id, "agentName": s.agent_name, "buckets": [_bucket(b) for b in s.buckets]}
                   for s in result.series],
        "generatedAt": iso(utcnow()),
    }


def _bucket(b: Bucket) -> dict:
    return {"start": iso(b.start), "count": b.count, "answered": b.answered, "completed": b.completed,
            "answerRate": b.answer_rate, "completionRate": b.completion_rate,
            "durationMs": {"avg": b.duration_avg_ms, "p50": b.duration_p50_ms, "p90": b.duration_p90_ms},
            "endReasons": [{"reason": r.reason, "count": r.count} for r in b.end_reasons],
            "otherEndReasons": b.other_end_reasons}
