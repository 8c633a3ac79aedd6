"""The request id and the access-log line, one convention for both servers.

Every response carries ``X-Request-ID``: the caller's own if it is safe to echo (and to write to a
log), else a new one. The access line names the path only, never the query string, because the
speech server's WebSocket takes its credential as ``?token=``.
"""
from __future__ import annotations

import logging
import re
import uuid

_SAFE_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


def request_id_from(incoming: str | None) -> str:
    return incoming if incoming and _SAFE_ID.fullmatch(incoming) else uuid.uuid4().hex


def log_access(logger: logging.Logger, method: str, path: str, status: int, started: float, finished: float,
               request_id: str) -> None:
    # isEnabledFor first: with the log off, a request pays for no formatting at all.
    if logger.isEnabledFor(logging.INFO):
        logger.info("%s %s %d %.1fms %s", method, path, status, (finished - started) * 1000, request_id)
