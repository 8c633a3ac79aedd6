"""The access line and the log format both servers share."""
from __future__ import annotations

import io
import json
import logging
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from core.request_log import LOGGED_PATH_CHARS, JsonFormatter, configure_logging, log_access, request_id_from


def _capture(formatter: logging.Formatter):
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    logger = logging.getLogger("test.access")
    logger.handlers[:] = [handler]
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return logger, stream


def test_a_json_access_line_carries_its_fields_as_keys():
    logger, stream = _capture(JsonFormatter())
    log_access(logger, "GET", "/api/v2/api-keys", 200, 1.0, 1.0125, "rid-1", operation="listApiKeys",
               credential_id="key-7")
    entry = json.loads(stream.getvalue())
    assert entry["level"] == "INFO" and entry["logger"] == "test.access"
    assert {k: entry[k] for k in ("method", "path", "operation", "status", "ms", "request_id", "credential_id")} == {
        "method": "GET", "path": "/api/v2/api-keys", "operation": "listApiKeys", "status": 200, "ms": 12.5,
        "request_id": "rid-1", "credential_id": "key-7"}


def test_a_text_access_line_names_the_operation_and_credential_not_a_secret():
    logger, stream = _capture(logging.Formatter("%(message)s"))
    log_access(logger, "POST", "/v1/audio/transcriptions", 401, 0.0, 0.002, "rid-2")
    assert stream.getvalue().strip() == "POST /v1/audio/transcriptions - 401 2.0ms rid-2 -"


def test_a_path_is_logged_on_one_line_with_its_control_characters_escaped_and_cut_short():
    logger, stream = _capture(logging.Formatter("%(message)s"))
    log_access(logger, "GET", "/v1/x\n2026-01-01 INFO api.access GET /forged", 404, 0.0, 0.001, "rid-3")
    log_access(logger, "GET", "/" + "a" * 100_000, 404, 0.0, 0.001, "rid-4")
    forged, long = stream.getvalue().splitlines()
    assert forged.startswith("GET /v1/x\\x0a2026-01-01 INFO api.access GET /forged - 404")
    assert len(long) < LOGGED_PATH_CHARS + 100 and "(100001 characters)" in long


def test_a_json_line_of_an_exception_keeps_it_on_one_line():
    logger, stream = _capture(JsonFormatter())
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logger.exception("failed")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 and "RuntimeError: boom" in json.loads(lines[0])["exception"]


def test_an_unknown_log_format_is_refused_by_name():
    with pytest.raises(ValueError, match="LOG_FORMAT"):
        configure_logging("INFO", "xml")


@pytest.mark.parametrize("incoming, echoed", [("abc-123_x.y", True), ("a" * 64, True), ("a" * 65, False),
                                              ("bad id", False), ("", False), (None, False)])
def test_a_request_id_is_echoed_only_when_safe(incoming, echoed):
    assert (request_id_from(incoming) == incoming) is echoed


def test_new_request_ids_are_unique_across_threads_and_forked_processes():
    with ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(lambda _: request_id_from(None), range(20_000)))
    assert len(set(ids)) == len(ids) and all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # a worker process forked from this one draws ids of its own
        os.write(write, "".join(request_id_from(None) for _ in range(100)).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    with os.fdopen(read) as pipe:
        text = pipe.read()
    forked = {text[i:i + 32] for i in range(0, len(text), 32)}
    assert len(forked) == 100
    assert not forked & {request_id_from(None) for _ in range(100)} and not forked & set(ids)


def test_lines_are_written_in_batches():
    from core.request_log import _Handler

    class Slow(_Handler):
        FLUSH_S = 60  # no timed flush during the test
    handler, stream = Slow(), io.StringIO()
    handler.setStream(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    record = lambda n, level=logging.INFO: logging.LogRecord("t", level, __file__, 1, str(n), None, None)  # noqa: E731
    for n in range(Slow.BATCH - 1):
        handler.handle(record(n))
    assert stream.getvalue() == ""
    handler.handle(record(Slow.BATCH - 1))
    assert stream.getvalue().split() == [str(n) for n in range(Slow.BATCH)]
    handler.handle(record("info"))
    handler.handle(record("warning", logging.WARNING))  # written at once, after what was pending
    assert stream.getvalue().split()[-2:] == ["info", "warning"]
    handler.handle(record("last"))
    handler.close()  # as logging.shutdown does at exit
    assert stream.getvalue().split()[-1] == "last"


_LOGS = """
import logging, os, sys, time
from core.request_log import configure_logging
configure_logging("INFO")
log = logging.getLogger("t")
log.info("first")
log.info("second")
if sys.argv[1] == "quiet":
    time.sleep(10)  # nothing more is logged: the lines must come out all the same
else:
    log.warning("third")
    os._exit(0)  # no exit handlers: only what was written is there
"""


def _stderr(mode: str) -> str:
    import subprocess
    import sys

    from tests.support.servers import ROOT
    if mode == "quiet":
        process = subprocess.Popen([sys.executable, "-c", _LOGS, mode], cwd=ROOT, stderr=subprocess.PIPE, text=True)
        try:
            seen = ""
            while "second" not in seen and (line := process.stderr.readline()):
                seen += line
            return seen
        finally:
            process.kill()
            process.wait()
    return subprocess.run([sys.executable, "-c", _LOGS, mode], cwd=ROOT, capture_output=True, text=True,
                          timeout=60).stderr


def test_a_line_is_written_though_nothing_is_logged_after_it():
    started = time.monotonic()
    assert [line.split()[-1] for line in _stderr("quiet").splitlines()] == ["first", "second"]
    assert time.monotonic() - started < 8  # well before the process's 10 s are over


def test_a_warning_is_written_at_once_with_every_line_before_it():
    assert [line.split()[-1] for line in _stderr("warning").splitlines()] == ["first", "second", "third"]
