"""What the speech server's handlers share: settings, models, the engine pool and its counters."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from aiohttp import web

from core.settings import Settings

from .models import ModelSet


@dataclass
class Metrics:
    requests: dict
    audio_seconds: float = 0.0
    inference_seconds: float = 0.0
    queue_depth: int = 0

    def render(self, streams: int) -> str:
        lines = ["# TYPE stt_requests_total counter"]
        lines += [f'stt_requests_total{{status="{s}"}} {n}' for s, n in sorted(self.requests.items())]
        lines += ["# TYPE stt_audio_seconds_total counter", f"stt_audio_seconds_total {self.audio_seconds:.3f}",
                  "# TYPE stt_inference_seconds_total counter", f"stt_inference_seconds_total {self.inference_seconds:.3f}",
                  "# TYPE stt_queue_depth gauge", f"stt_queue_depth {self.queue_depth}",
                  "# TYPE stt_streams gauge", f"stt_streams {streams}"]
        return "\n".join(lines) + "\n"


class State:
    """What the handlers share: the models, the engine pool and its admission counter, metrics."""

    def __init__(self, settings: Settings, models: ModelSet):
        self.settings = settings
        self.models = models
        self.policy = settings.rate_limit_policy()
        self.engine = ThreadPoolExecutor(max_workers=settings.stt_workers, thread_name_prefix="stt-engine")
        self.capacity = settings.stt_workers + settings.stt_queue
        self.admitted = 0  # jobs running or waiting in the engine pool; only touched on the loop
        self.streams = 0  # open real-time sessions; only touched on the loop
        self.metrics = Metrics(requests={})
        self.ready = False


STATE = web.AppKey("state", State)
