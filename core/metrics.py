"""What both servers' Prometheus metrics share: the exposition, multiprocess mode, the buckets.
Each server declares its own metrics beside it (api.metrics, stt.metrics), so that neither
exposes the other's.

Several API worker processes each count their own requests; a scrape reaches one of them. So when
the API runs more than one worker, ``api.serve`` points ``PROMETHEUS_MULTIPROC_DIR`` at an empty
directory before the workers start: each process then writes its values to files there, and
``/metrics`` in any worker sums them all (prometheus_client's multiprocess mode). The variable must
be set before prometheus_client is imported, which is why the workers inherit it rather than set
it. The speech server is one process and keeps the default registry.

``/metrics`` needs no credential on either server, as is usual for a scrape target: expose the
ports to the monitoring network only, or put the path behind the proxy's own access rule.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = CONTENT_TYPE_LATEST

# Seconds: from well under a millisecond (a cached read) to a long transcription.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
RTF_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)


class RequestMetrics:
    """What each server counts of every request it answers: requests by ``label`` (a bounded set:
    the API's operationId, the speech server's route) and status, their latency, and rate-limit
    refusals; named ``<prefix>_requests_total``, ``<prefix>_request_duration_seconds`` and
    ``<prefix>_rate_limit_refusals_total``."""

    def __init__(self, prefix: str, server: str, label: str) -> None:
        self.requests = Counter(f"{prefix}_requests_total", f"{server} requests answered, by {label} and status.",
                                [label, "status"])
        self.latency = Histogram(f"{prefix}_request_duration_seconds", f"{server} request latency, by {label}.",
                                 [label], buckets=LATENCY_BUCKETS)
        self.rate_limited = Counter(f"{prefix}_rate_limit_refusals_total", f"{server} requests refused with 429.")
        # The children of each (label, status) seen, kept: labels() checks and locks on every call.
        # Both sets are bounded, so this is too.
        self._children: dict[tuple[str, int], tuple] = {}

    def observe(self, value: str, status: int, seconds: float) -> None:
        """One answered request; ``value`` of the label is "-" where no route matched."""
        children = self._children.get((value, status))
        if children is None:
            children = self._children[value, status] = (self.requests.labels(value, str(status)),
                                                         self.latency.labels(value))
        children[0].inc()
        children[1].observe(seconds)
        if status == 429:
            self.rate_limited.inc()


def prepare_multiprocess(directory: Path) -> None:
    """In the parent, before any worker starts: an empty directory for the workers' values."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    os.environ[MULTIPROC_ENV] = str(directory)


def exposition() -> bytes:
    """Every metric of this process, or of every worker in multiprocess mode, in the text format."""
    if os.environ.get(MULTIPROC_ENV):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry)
    return generate_latest(REGISTRY)
