"""The management API's Prometheus metrics, and GET /metrics, outside the versioned contract, as
scrapers expect it at the root. In multiprocess mode (see core.metrics) a scrape reads every
worker's files, so it is rendered off the event loop."""
from __future__ import annotations

import anyio.to_thread
from prometheus_client import Counter

from core.metrics import CONTENT_TYPE, RequestMetrics, exposition

from .root_endpoint import RootEndpoint

# By operationId.
REQUESTS = RequestMetrics("api", "Management API", "operation")
# Many a minute means clients keep reconnecting to the same worker (api.connection_balance).
BALANCING_CLOSES = Counter("api_connections_closed_for_balance_total",
                           "Kept-alive connections a worker ended (Connection: close on a complete answer) "
                           "because it held two or more connections more than another worker.")


class MetricsEndpoint(RootEndpoint):
    PATH = "/metrics"

    async def answer(self):
        return 200, CONTENT_TYPE, await anyio.to_thread.run_sync(exposition), []
