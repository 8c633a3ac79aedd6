"""The management API's Prometheus metrics, and GET /metrics, outside the versioned contract, as
scrapers expect it at the root. In multiprocess mode (see core.metrics) a scrape reads every
worker's files, so it is rendered off the event loop."""
from __future__ import annotations

import anyio.to_thread
from prometheus_client import Counter, Histogram
from starlette.types import ASGIApp, Receive, Scope, Send

from core.metrics import CONTENT_TYPE, LATENCY_BUCKETS, exposition

PATH = "/metrics"

REQUESTS = Counter("api_requests_total", "Management API requests answered, by operation and status.",
                   ["operation", "status"])
LATENCY = Histogram("api_request_duration_seconds", "Management API request latency, by operation.",
                    ["operation"], buckets=LATENCY_BUCKETS)
RATE_LIMITED = Counter("api_rate_limit_refusals_total", "Management API requests refused with 429.")


def observe(operation: str, status: int, seconds: float) -> None:
    """One answered request; ``operation`` is its operationId, "-" where no route matched (a
    bounded label set whatever paths clients try)."""
    REQUESTS.labels(operation, str(status)).inc()
    LATENCY.labels(operation).observe(seconds)
    if status == 429:
        RATE_LIMITED.inc()


class MetricsEndpoint:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != PATH or scope["method"] not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        body = await anyio.to_thread.run_sync(exposition)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", CONTENT_TYPE.encode()), (b"content-length", str(len(body)).encode()),
                                (b"cache-control", b"no-store")]})
        await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})
