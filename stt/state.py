"""What the speech server's handlers share: settings, models, the engine pool and its counters."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from aiohttp import web

from core.settings import Settings

from .customisation import CustomisationCache
from .models import ModelSet


class State:
    """What the handlers share: the models, the engine pool and its admission counter
    (which the metrics' gauges read: stt.metrics)."""

    def __init__(self, settings: Settings, models: ModelSet):
        self.settings = settings
        self.models = models
        self.policy = settings.rate_limit_policy()
        self.engine = ThreadPoolExecutor(max_workers=settings.stt_workers, thread_name_prefix="stt-engine")
        self.capacity = settings.stt_workers + settings.stt_queue
        # Uploads whose body is in, transcribing or waiting for the engine; only touched on the loop.
        self.admitted = 0
        self.streams = 0  # configured real-time sessions; only touched on the loop
        self.sockets_by_credential: dict[str, int] = {}  # open WebSockets per credential id; on the loop
        self.sessions: set = set()  # open real-time sessions (stt.stream.Session), ended on shutdown; on the loop
        self.ready = False
        # Each workspace's vocabulary and speech filter, read again every few seconds.
        self.customisations = CustomisationCache(settings.stt_customisation_ttl_s)


STATE = web.AppKey("state", State)
