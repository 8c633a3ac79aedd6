"""The management API's Prometheus metrics, and GET /metrics, outside the versioned contract, as
scrapers expect it at the root. In multiprocess mode (see core.metrics) a scrape reads every
worker's files, so it is rendered off the event loop."""
from __future__ import annotations

import anyio.to_thread
from prometheus_client import Counter
from starlette.types import ASGIApp, Receive, Scope, Send

from core.metrics import CONTENT_TYPE, RequestMetrics, exposition

PATH = "/metrics"

# By operationId.
REQUESTS = RequestMetrics("api", "Management API", "operation")
# Many a minute means clients keep reconnecting to the same worker (api.connection_balance).
BALANCING_CLOSES = Counter("api_connections_closed_for_balance_total",
                           "Kept-alive connections a worker ended (Connection: close on a complete answer) "
                           "because it held two or more connections more than another worker.")


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
