"""What keeps a real-time session from holding the server forever: its deadlines and its pace.

Plain arithmetic on one monotonic clock, so that the rules are testable without a socket;
stt.stream enforces them. A session (times in seconds, settings in parentheses):

- must send its config frame within ``config_timeout`` of opening (STT_CONFIG_TIMEOUT_S);
- once configured, must send audio at least every ``idle_timeout`` (STT_IDLE_TIMEOUT_S), counted
  from the last audio frame or from the moment the server is ready to read again after holding;
- lasts at most ``max_session`` from its config frame (STT_MAX_SESSION_S);
- may run ahead of real time by ``realtime_margin`` at most (STT_REALTIME_MARGIN_S): audio
  seconds received since the config frame minus wall seconds elapsed since then. Past it the
  server holds (does not read the next frame) until real time catches up, so that a client
  sending an hour of audio at once is transcribed at the pace of a live speaker and leaves the
  shared engine to the other sessions;
- has its credential checked again every ``recheck`` (STT_RECHECK_S).
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Expiry(Enum):
    """Why a session's time is up."""
    CONFIG = "config"  # no config frame in time
    IDLE = "idle"  # no audio in time
    SESSION = "session"  # the maximum session length was reached


@dataclass(frozen=True)
class Limits:
    config_timeout: float
    idle_timeout: float
    max_session: float
    realtime_margin: float
    recheck: float

    @classmethod
    def from_settings(cls, settings) -> Limits:
        return cls(config_timeout=settings.stt_config_timeout_s, idle_timeout=settings.stt_idle_timeout_s,
                   max_session=settings.stt_max_session_s, realtime_margin=settings.stt_realtime_margin_s,
                   recheck=settings.stt_recheck_s)


class SessionClock:
    """One session's deadlines and pace. Every method takes ``now`` (time.monotonic() in the server)."""

    def __init__(self, limits: Limits, opened: float):
        self.limits = limits
        self.opened = opened
        self.started: float | None = None  # when the config frame came
        self.audio_seconds = 0.0  # received since the config frame
        self._last_audio = 0.0
        self._next_check = opened + limits.recheck  # the handshake was the first check

    @property
    def configured(self) -> bool:
        return self.started is not None

    def configure(self, now: float) -> None:
        self.started = self._last_audio = now

    def add_audio(self, seconds: float, now: float) -> None:
        self.audio_seconds += seconds
        self._last_audio = now

    def hold(self, now: float) -> float:
        """Seconds the server must wait before it reads the next frame: 0 within the margin."""
        if self.started is None:
            return 0.0
        return max(0.0, self._caught_up() - now)

    def expired(self, now: float) -> Expiry | None:
        """The first rule whose deadline has passed, or None."""
        for expiry, deadline in self._deadlines():
            if now >= deadline:
                return expiry
        return None

    def recheck_due(self, now: float) -> bool:
        return now >= self._next_check

    def rechecked(self, now: float) -> None:
        self._next_check = now + self.limits.recheck

    def next_event(self, now: float) -> float:
        """Seconds until a deadline passes or a recheck is due (0 when one already has)."""
        soonest = min([deadline for _, deadline in self._deadlines()] + [self._next_check])
        return max(0.0, soonest - now)

    def _caught_up(self) -> float:
        """When wall time since the config frame reaches the audio received, less the margin."""
        return self.started + self.audio_seconds - self.limits.realtime_margin

    def _deadlines(self) -> list[tuple[Expiry, float]]:
        if self.started is None:
            return [(Expiry.CONFIG, self.opened + self.limits.config_timeout)]
        # While the server holds, the client's next frames wait unread: that is not idleness.
        ready_since = max(self._last_audio, self._caught_up())
        return [(Expiry.SESSION, self.started + self.limits.max_session),
                (Expiry.IDLE, ready_since + self.limits.idle_timeout)]
