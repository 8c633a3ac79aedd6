"""The access line and the log format both servers share."""
from __future__ import annotations

import io
import json
import logging

import pytest

from core.request_log import JsonFormatter, configure_logging, log_access, request_id_from


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
