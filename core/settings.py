"""Every setting the servers read from the environment, with its default."""
from __future__ import annotations

import os
import dataclasses
from dataclasses import dataclass, fields

from models.identity.rate_limits import Limit, Policy
from models.kernel.db import is_postgres_url


def _bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name} must be true or false, not {value!r}")


def _int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return default if value in (None, "") else int(value)


def _float(name: str, default: float) -> float:
    value = os.environ.get(name)
    return default if value in (None, "") else float(value)


_PARSE = {"int": _int, "float": _float, "bool": _bool}
# Read as written, then put in the form their users take: logging's level names are upper case.
_NORMALISE = {"log_level": str.upper, "log_format": str.lower, "stt_weights": str.lower}


def _same(value):
    return value


def _unless_zero(limit: Limit) -> Limit | None:
    """A limit of 0 in either window switches that limit off."""
    return limit if limit.per_minute > 0 and limit.per_day > 0 else None


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    api_port: int = 8000
    stt_port: int = 8001
    workers: int = 1
    data_dir: str = "data"
    # Encrypts secrets kept at rest (webhook signing secrets); None: a key file in data_dir.
    secret_key: str | None = None
    database_url: str | None = None
    db_pool_size: int = 20
    # Threads per API process that run handlers and their SQL; None: 1 on SQLite, 2 on PostgreSQL.
    api_threads: int | None = None
    # The platform default for credentials without their own limit; switched off as a whole by rate_limits_enabled.
    rate_limits_enabled: bool = True
    default_requests_per_minute: int = 600
    default_requests_per_day: int = 100_000
    # The limit of each client address (an IPv6 one by its /64) on the operations that take no
    # credential (accepting an invitation), whose every request is a guess worth bounding.
    anonymous_requests_per_minute: int = 30
    anonymous_requests_per_day: int = 1000
    # Peers whose X-Forwarded-For (and X-Forwarded-Proto) uvicorn takes as the client's: the reverse
    # proxies in front of the API, comma-separated ("*": any peer). The client address is what the
    # anonymous limit counts, so a proxy left out makes every client look like the proxy.
    forwarded_allow_ips: str = "127.0.0.1,::1"
    # How long a request waits for a pooled PostgreSQL connection before it is answered 503.
    db_pool_timeout_s: float = 10.0
    max_body_bytes: int = 1_048_576
    # Call recordings (PUT /call/{callId}/recording): the largest upload, streamed to DATA_DIR.
    max_recording_bytes: int = 100 * 1024 * 1024
    # Threads per API process that transcribe uploaded recordings (0: none in this process), and
    # the lease a worker holds on a job, renewed while it works: a job whose worker died is taken
    # again once its lease has run out.
    transcription_workers: int = 1
    transcription_lease_s: float = 60.0
    # Management API: a request's line and headers must have arrived within this long of the
    # connection opening or of the previous answer (408 past it), and be at most this large (431).
    api_head_timeout_s: float = 10.0
    # An upload's body (a recording) that sends nothing for this long is answered 408.
    api_body_timeout_s: float = 30.0
    api_max_head_bytes: int = 65536
    log_level: str = "INFO"
    log_format: str = "text"  # or "json": one JSON object per line, for log shippers
    # The speech server.
    stt_enabled: bool = True
    stt_model_path: str | None = None  # a ggml file used as svc-stt instead of the bundled tiny.en
    # The type of the bundled models' converted matrices: q8_0, or f16, f32, q5_0, q5_1, q4_0.
    stt_weights: str = "q8_0"
    # whisper.cpp threads per engine worker, and engine workers (loaded model contexts) running
    # passes at once. One thread each: whisper.cpp's threads spin at a barrier many times a pass, so
    # two threads on a core that anything else wants (the API, the event loop, another pass) made a
    # pass 18 to 66 times slower; two workers of one thread use both cores of a small host without it.
    stt_threads: int = 1
    stt_workers: int = 2
    stt_queue: int = 4  # uploads that may wait for a worker; past it: 503
    stt_max_file_bytes: int = 15 * 1024 * 1024
    stt_max_streams: int = 4  # real-time sessions at once; past it a new one gets an error frame
    # Seconds of audio one upload may hold; longer files are refused before they are decoded.
    stt_max_audio_seconds: float = 1800.0
    # An upload body that sends nothing for this long is dropped.
    stt_body_timeout_s: float = 30.0
    # OpenAI model ids accepted as the default model, comma-separated.
    stt_model_aliases: str = "whisper-1,gpt-4o-transcribe,gpt-4o-mini-transcribe"
    # Real-time sessions: a config frame within, audio at least every, a session at most.
    stt_config_timeout_s: float = 10.0
    stt_idle_timeout_s: float = 30.0
    stt_max_session_s: float = 3600.0
    # How far a session's audio may run ahead of real time before the server stops reading.
    stt_realtime_margin_s: float = 10.0
    # How often an open session's credential is checked again.
    stt_recheck_s: float = 10.0
    stt_streams_per_credential: int = 2  # open WebSocket sessions one credential may hold
    # How long the speech server keeps a workspace's vocabulary and speech filter before reading them again.
    stt_customisation_ttl_s: float = 5.0
    # On SIGTERM: how long in-flight requests and open real-time sessions get to finish.
    shutdown_timeout_s: float = 30.0
    cors_origins: str = ""  # origins whose pages may call either server, comma-separated; none by default
    # Outbound webhooks: threads per API process that deliver (0: none in this process), an
    # attempt's total time (connecting: 5 s at most of it), the first retry's mean delay (doubling,
    # full jitter, capped at an hour), and what receivers may be: http URLs, private addresses.
    webhook_workers: int = 2
    webhook_timeout_s: float = 15.0
    webhook_retry_base_s: float = 5.0
    webhook_allow_http: bool = False
    webhook_allow_private_addresses: bool = False
    # How often each API process purges calls past their workspace's retention (0: never).
    retention_interval_s: float = 3600.0
    # Credits: refuse new transcriptions of a workspace whose balance is below zero (402); the
    # prices of what the service debits (models.billing.credits).
    credits_enforced: bool = False
    credits_per_call_minute: int = 1
    credits_per_transcribed_second: int = 1
    # The longest call a report may describe (durationMs, and endedAt after startedAt): a
    # report's figure is debited as it comes, so an unbounded one could empty any balance.
    max_call_duration_s: float = 86400.0
    # The OpenAI-compatible chat-completions endpoint the optimizer (and simulations, judges) ask:
    # its base URL (".../v1"), key and model. Without a base URL those features fail, clearly.
    llm_base_url: str | None = None
    llm_api_key: str | None = dataclasses.field(default=None, repr=False)  # never in a log line
    llm_model: str = "gpt-4o-mini"
    llm_timeout_s: float = 60.0
    # Threads per API process that generate optimization runs' solutions (0: none in this process),
    # and the lease a worker holds on a run while it asks the endpoint.
    optimization_workers: int = 1
    optimization_lease_s: float = 120.0
    # How long a run given to an external optimizer may stay generating before it fails.
    external_optimizer_timeout_s: float = 3600.0
    # What a million tokens of the endpoint cost (prompt, completion), for a simulation's cost;
    # in whatever currency the user reads them, 0 when unknown.
    llm_input_cost_per_million: float = 0.0
    llm_output_cost_per_million: float = 0.0
    # Threads per API process that run simulations' conversations (0: none in this process), and
    # the lease a worker holds on an iteration while it converses (renewed while it lasts).
    simulation_workers: int = 2
    simulation_lease_s: float = 120.0
    # Whole-workspace exports: threads per API process that write them (0: none in this process),
    # the lease a worker holds on one while it writes (renewed meanwhile), and how long a finished
    # export's file is kept before it expires and is deleted.
    export_workers: int = 1
    export_lease_s: float = 60.0
    export_ttl_s: float = 7 * 24 * 3600.0
    # Threads per API process that push agent and workflow configurations to runtimes (0: none in
    # this process); an attempt's time and the retries' backoff are the outbound webhooks'.
    sync_workers: int = 1
    # Knowledge documents: the largest file uploaded or fetched from a URL (413 past it); a fetch
    # goes under the outbound webhooks' address rules and WEBHOOK_TIMEOUT_S.
    kb_max_document_bytes: int = 10 * 1024 * 1024

    def handler_threads(self) -> int:
        """How many worker threads of one API process run handlers marked ``x-in-thread`` (those
        that may wait on something else than the database) and the SQL of async handlers; every
        other handler runs on the event loop (see api.app).

        Python runs one thread at a time, and a thread that drops the GIL for a statement must win
        it back: more threads only wait on each other (at 16 concurrent requests on SQLite, 40
        threads served 410 req/s with p99 72 ms, one thread 620 req/s with p99 35 ms). SQLite
        answers in-process, so one is enough; PostgreSQL answers over a socket, so a second works
        while the first waits. With the event loop's own connection, never more than the pool holds.
        """
        wanted = self.api_threads or (2 if is_postgres_url(self.database_url) else 1)
        return max(1, min(wanted, self.db_pool_size - 1))

    def rate_limit_policy(self) -> Policy:
        default = Limit(self.default_requests_per_minute, self.default_requests_per_day)
        anonymous = Limit(self.anonymous_requests_per_minute, self.anonymous_requests_per_day)
        return Policy(enabled=self.rate_limits_enabled, default=_unless_zero(default),
                      anonymous=_unless_zero(anonymous))

    @classmethod
    def from_env(cls) -> "Settings":
        """Each field from the environment variable of its name in capitals (``api_port``:
        ``API_PORT``), parsed by its type; an unset or empty variable leaves the default (a field
        that may be None: None, as does API_THREADS=0)."""
        values = {}
        for field in fields(cls):
            kind, optional = field.type.removesuffix(" | None"), field.type.endswith(" | None")
            name = field.name.upper()
            if kind == "str":
                value = os.environ.get(name, field.default)
            else:
                value = _PARSE[kind](name, 0 if field.default is None else field.default)
            if optional:
                value = value or None
            values[field.name] = _NORMALISE.get(field.name, _same)(value)
        return cls(**values)
