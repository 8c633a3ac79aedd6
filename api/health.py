"""GET /health: whether this API process can serve, for a container's health check or a load
balancer. Outside the versioned contract and without a credential, as probes expect it at the
root, and in the envelope as every answer of the API. It is 200 only when the database answers a
trivial query: a process cut off from its database (PostgreSQL down, no connection free within
DB_POOL_TIMEOUT_S) is unhealthy, 503 with Retry-After, as its other answers would be."""
from __future__ import annotations

import logging

import anyio.to_thread
import orjson

from models.kernel.db import session
from models.kernel.errors import Unavailable

from .envelope import error_body, ok
from .root_endpoint import RootEndpoint

log = logging.getLogger("api.health")


def _database_failure() -> Unavailable | None:
    try:
        with session() as db:
            db.execute_sql("SELECT 1").fetchone()
    except Unavailable as exc:
        return exc
    return None


class HealthEndpoint(RootEndpoint):
    PATH = "/health"

    async def answer(self):
        # In a thread: on PostgreSQL the wait for a pooled connection must not hold the event loop.
        failure = await anyio.to_thread.run_sync(_database_failure)
        if failure is None:
            body = orjson.dumps(ok({"status": "ok"}, "The API and its database are serving.")[0])
            return 200, "application/json", body, []
        # The operator learns why (the driver's words stay in the log); the probe, that it failed.
        log.warning("health check failed: %s", failure.__cause__ or failure.message)
        return (failure.status, "application/json",
                error_body(failure.status, failure.message, failure.code, {"status": "unavailable"}),
                [(b"retry-after", str(failure.retry_after_s).encode())])
