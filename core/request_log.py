"""The request id, the access-log line and the log format, one convention for both servers.

Every response carries ``X-Request-ID``: the caller's own if it is safe to echo (and to write to a
log), else a new one. The access line names the path only, never the query string, because the
speech server's WebSocket takes its credential as ``?token=``; it names the credential by its id,
never its secret.

``LOG_FORMAT=json`` writes one JSON object per line (for log shippers): the record's time, level,
logger and message, and an access line's fields as keys of their own.
"""
from __future__ import annotations

import itertools
import logging
import os
import re
import threading

import orjson

from models.kernel.text import printable

_SAFE_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
# Ids are at most 255 characters; a path of megabytes is an attack, not something to log whole.
LOGGED_PATH_CHARS = 300
# The fields an access line carries besides its message.
ACCESS_FIELDS = ("method", "path", "operation", "status", "ms", "request_id", "credential_id", "bytes", "complete")


def request_id_from(incoming: str | None) -> str:
    return incoming if incoming and _SAFE_ID.fullmatch(incoming) else _new_request_id()


class _RequestIds:
    """New ids: 16 random bytes drawn once per process, then a counter, 32 hex characters as a
    uuid4's. A uuid4 per request asks the kernel for randomness every time, a tenth of the event
    loop's time for a request that does little else; an id needs to be unique, not secret. A
    forked process draws its own prefix, so no two processes share one."""

    def __init__(self) -> None:
        self._reseed()
        os.register_at_fork(after_in_child=self._reseed)

    def _reseed(self) -> None:
        self._prefix = int.from_bytes(os.urandom(16), "big")
        self._count = itertools.count(1)

    def __call__(self) -> str:
        # next() on itertools.count is atomic under the GIL: threads never draw the same number.
        return f"{(self._prefix + next(self._count)) & _ID_MASK:032x}"


_ID_MASK = (1 << 128) - 1
_new_request_id = _RequestIds()


def log_access(logger: logging.Logger, method: str, path: str, status: int, started: float, finished: float,
               request_id: str, *, operation: str | None = None, credential_id: str | None = None,
               bytes_sent: int | None = None, complete: bool = True) -> None:
    """The access line of one request. The path, as the client sent it, is written with its control
    characters escaped (a %0A must not start a forged line) and cut to LOGGED_PATH_CHARS.
    ``bytes_sent``, where the server knows it, is the response body as sent; a response cut short
    (its client left, or its body failed midway) is not ``complete``, and its line says so: the
    status alone was sent before the body and would claim an answer that did not arrive."""
    # isEnabledFor first: with the log off, a request pays for no formatting at all.
    if logger.isEnabledFor(logging.INFO):
        path = printable(path, LOGGED_PATH_CHARS)
        ms = round((finished - started) * 1000, 1)
        text, args = _TEXT, (method, path, operation or "-", status, ms, request_id, credential_id or "-")
        if bytes_sent is not None:
            text, args = text + " %dB", (*args, bytes_sent)
        if not complete:
            text += " incomplete"
        # The record made here rather than by logger.info, which would walk the stack to find what
        # is known: the caller is this function.
        logger.handle(logger.makeRecord(
            logger.name, logging.INFO, __file__, _ACCESS_LINE, text, args, None, "log_access",
            {"method": method, "path": path, "operation": operation, "status": status, "ms": ms,
             "request_id": request_id, "credential_id": credential_id, "bytes": bytes_sent, "complete": complete}))


_TEXT = "%s %s %s %d %.1fms %s %s"
_ACCESS_LINE = log_access.__code__.co_firstlineno


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {"time": self.formatTime(record), "level": record.levelname, "logger": record.name,
                 "message": record.getMessage()}
        for name in ACCESS_FIELDS:
            if (value := getattr(record, name, None)) is not None:
                entry[name] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


def configure_logging(level: str | int, log_format: str = "text") -> None:
    """The root logger's level and format, for every entry point (see core.boot). As with
    ``logging.basicConfig``, a process whose root logger already has handlers of another's (a test
    runner's) keeps them and its level."""
    if log_format not in ("text", "json"):
        raise ValueError(f"LOG_FORMAT must be text or json, not {log_format!r}")
    root = logging.getLogger()
    if any(not isinstance(h, _Handler) for h in root.handlers):
        return
    handler = _Handler()
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    for old in root.handlers:
        old.close()
    root.handlers[:] = [handler]
    root.setLevel(level)


def write_at_once() -> None:
    """From now on this process writes each log line as it is logged, and what is pending now:
    for its shutdown, after which it may end without flushing (a signal's default action)."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, _Handler):
            with handler.lock:
                handler._at_once = True
                handler._write()


class _Handler(logging.StreamHandler):
    """Ours, so that configuring again (each uvicorn worker boots) replaces rather than adds.

    Lines are written in batches, within FLUSH_S of being logged, and a warning or worse (with
    every line before it) at once. Each write to stderr releases the GIL, and on a busy server the
    event loop then waits for a handler thread to give it back: one write per access line cost
    10 % of GET /permissions' throughput at 16 concurrent requests (1,300 → 1,430 req/s batched,
    1,590 with no access log). A process killed with SIGKILL loses at most FLUSH_S of lines; one
    that exits flushes them (logging.shutdown)."""

    FLUSH_S = 0.2
    BATCH = 64

    def __init__(self) -> None:
        super().__init__()
        self._pending: list[str] = []
        self._at_once = False
        self._closed = threading.Event()
        threading.Thread(target=self._flush_periodically, name="log-flush", daemon=True).start()

    def emit(self, record: logging.LogRecord) -> None:
        # Called under the handler's lock (Handler.handle).
        try:
            self._pending.append(self.format(record))
        except Exception:
            self.handleError(record)
            return
        if self._at_once or record.levelno >= logging.WARNING or len(self._pending) >= self.BATCH:
            self._write()

    def flush(self) -> None:
        with self.lock:
            self._write()

    def close(self) -> None:
        self._closed.set()
        self.flush()
        super().close()

    def _write(self) -> None:
        if not self._pending:
            return
        lines, self._pending = self._pending, []
        try:
            self.stream.write("\n".join(lines) + "\n")
            self.stream.flush()
        except Exception:
            pass  # stderr gone (a closed pipe): nothing to tell it

    def _flush_periodically(self) -> None:
        while not self._closed.wait(self.FLUSH_S):
            self.flush()
