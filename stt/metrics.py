"""The speech server's Prometheus metrics, rendered at /metrics by prometheus_client (see
core.metrics). The server is one process, so the default registry holds them."""
from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from core.metrics import RTF_BUCKETS, RequestMetrics

# By the route's path pattern.
REQUESTS = RequestMetrics("stt", "Speech server", "route")
AUDIO_SECONDS = Counter("stt_audio_seconds_total", "Seconds of audio transcribed from files.")
INFERENCE_SECONDS = Counter("stt_inference_seconds_total", "Seconds the engine spent on files.")
REAL_TIME_FACTOR = Histogram("stt_real_time_factor", "Engine seconds per second of audio, per file.",
                             buckets=RTF_BUCKETS)
QUEUE_DEPTH = Gauge("stt_queue_depth", "Uploads waiting for an engine worker.")
STREAMS = Gauge("stt_streams", "Open real-time sessions.")
REFUSED_AT_CAPACITY = Counter("stt_capacity_refusals_total", "Uploads refused with 503 because the queue was full.")


def transcribed(audio_seconds: float, inference_seconds: float) -> None:
    AUDIO_SECONDS.inc(audio_seconds)
    INFERENCE_SECONDS.inc(inference_seconds)
    if audio_seconds > 0:
        REAL_TIME_FACTOR.observe(inference_seconds / audio_seconds)


def track(state) -> None:
    """The gauges read the serving state's own counters at each scrape, so they cannot drift."""
    QUEUE_DEPTH.set_function(lambda: max(0, state.admitted - state.settings.stt_workers))
    STREAMS.set_function(lambda: state.streams)
