"""The access line says what was sent: the body's bytes, and whether the response went whole (its
status is sent before its body, and alone would claim an answer the client never got)."""
from __future__ import annotations

import logging

import pytest

from tests.support import factories
from tests.support.client import Api
from tests.support.held_exchanges import HeldExchange
from tests.support.uploads import WAV, upload

# What the recording's response reads from disk at a time (api.open_file_response).
PART = 64 * 1024


@pytest.fixture
def api(platform):
    return Api(platform, platform.workspace())


def access_line(caplog) -> logging.LogRecord:
    return [record for record in caplog.records if record.name == "api.access"][-1]


def held_download(api: Api, call_id: str) -> HeldExchange:
    return HeldExchange(api.client, f"/api/v2/call/{call_id}/recording",
                        params={"workspaceId": api.actor.workspace_id}, headers=api.actor.headers)


@pytest.mark.parametrize("parts", [0, 1, 5])
def test_a_response_whose_client_left_midway_is_logged_incomplete_with_the_bytes_sent(api, caplog, parts):
    call_id = factories.call(api.actor)
    upload(api, call_id, WAV)
    with caplog.at_level(logging.INFO, logger="api.access"):
        held = held_download(api, call_id)
        assert held.leave_after(parts) == WAV[:parts * PART] and not held.complete
    line = access_line(caplog)
    assert line.operation == "getCallRecording" and line.status == 200
    assert line.bytes == parts * PART < int(held.headers["content-length"]) and line.complete is False
    assert line.getMessage().endswith(f" {parts * PART}B incomplete")


def test_a_response_sent_whole_is_logged_complete_with_its_length(api, caplog):
    call_id = factories.call(api.actor)
    upload(api, call_id, WAV)
    with caplog.at_level(logging.INFO, logger="api.access"):
        held = held_download(api, call_id)
        assert held.read_body() == WAV and held.complete
        api.client.get("/api/v2/permissions", headers=api.actor.headers)
    download, permissions = [r for r in caplog.records if r.name == "api.access"][-2:]
    assert download.bytes == len(WAV) and download.complete is True
    assert download.getMessage().endswith(f" {len(WAV)}B")
    assert permissions.complete is True and permissions.bytes > 0
