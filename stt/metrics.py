"""The speech server's Prometheus metrics, rendered at /metrics by prometheus_client (see
core.metrics). The server is one process, so the default registry holds them."""
from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from core.metrics import LATENCY_BUCKETS, RTF_BUCKETS

REQUESTS = Counter("stt_requests_total", "Speech server requests answered, by route and status.", ["route", "status"])
LATENCY = Histogram("stt_request_duration_seconds", "Speech server request latency, by route.", ["route"],
                    buckets=LATENCY_BUCKETS)
RATE_LIMITED = Counter("stt_rate_limit_refusals_total", "Speech server requests refused with 429.")
AUDIO_SECONDS = Counter("stt_audio_seconds_total", "Seconds of audio transcribed from files.")
INFERENCE_SECONDS = Counter("stt_inference_seconds_total", "Seconds the engine spent on files.")
REAL_TIME_FACTOR = Histogram("stt_real_time_factor", "Engine seconds per second of audio, per file.",
                             buckets=RTF_BUCKETS)
QUEUE_DEPTH = Gauge("stt_queue_depth", "Uploads waiting for an engine worker.")
STREAMS = Gauge("stt_streams", "Open real-time sessions.")
REFUSED_AT_CAPACITY = Counter("stt_capacity_refusals_total", "Uploads refused with 503 because the queue was full.")


def observe(route: str, status: int, seconds: float) -> None:
    """One answered request; ``route`` is the route's path pattern ("-" where none matched, a
    bounded label set whatever paths clients try)."""
    REQUESTS.labels(route, str(status)).inc()
    LATENCY.labels(route).observe(seconds)
    if status == 429:
        RATE_LIMITED.inc()


def transcribed(audio_seconds: float, inference_seconds: float) -> None:
    AUDIO_SECONDS.inc(audio_seconds)
    INFERENCE_SECONDS.inc(inference_seconds)
    if audio_seconds > 0:
        REAL_TIME_FACTOR.observe(inference_seconds / audio_seconds)


def track(state) -> None:
    """The gauges read the serving state's own counters at each scrape, so they cannot drift."""
    QUEUE_DEPTH.set_function(lambda: max(0, state.admitted - state.settings.stt_workers))
    STREAMS.set_function(lambda: state.streams)
