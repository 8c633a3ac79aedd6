"""Recording uploads against a real server process, where a client can stall or vanish mid-body
(the in-process test client sends whole bodies): 408 for a stalled body, and no file left behind
either way."""
from __future__ import annotations

import socket
import time

import httpx
import pytest

from tests.support import factories
from tests.support.servers import start_server, stop_server


@pytest.fixture
def server(tmp_path):
    server = start_server(tmp_path, RATE_LIMITS_ENABLED="false", API_BODY_TIMEOUT_S="1")
    yield server
    stop_server(server)


def recorded_call(server) -> tuple[dict, str]:
    owner = server.admin("bootstrap", "--workspace", "w", "--email", "owner@example.com")
    report = factories.report(factories.Actor(owner["workspaceId"], owner["userId"], "", ""))
    r = httpx.post(f"{server.url}/api/v2/webhooks/end-of-call-report", params={"workspaceId": owner["workspaceId"]},
                   headers={"Authorization": f"Bearer {owner['token']}"}, json=report)
    assert r.status_code == 200, r.text
    return owner, report["callId"]


def partial_upload(server, owner: dict, call_id: str) -> socket.socket:
    """A socket that has sent the request head and 10 of the 1,000 bytes it announced."""
    host, port = server.url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.sendall((f"PUT /api/v2/call/{call_id}/recording?workspaceId={owner['workspaceId']} HTTP/1.1\r\n"
                  f"Host: {host}\r\nAuthorization: Bearer {owner['token']}\r\nContent-Type: audio/wav\r\n"
                  f"Content-Length: 1000\r\n\r\n").encode() + b"RIFF" + b"\0" * 6)
    return sock


def files(tmp_path) -> list:
    root = tmp_path / "data" / "recordings"
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def wait_for_no_files(tmp_path, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while files(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert files(tmp_path) == []


def test_a_stalled_body_is_408_and_leaves_no_file(server, tmp_path):
    owner, call_id = recorded_call(server)
    with partial_upload(server, owner, call_id) as sock:
        began = time.monotonic()
        received = [sock.recv(65536)]
        waited = time.monotonic() - began
        while received[-1]:  # the server closes the connection after its answer
            received.append(sock.recv(65536))
        answer = b"".join(received).decode()
    assert answer.startswith("HTTP/1.1 408"), answer
    assert '"success":false' in answer and "sent nothing for 1 seconds" in answer
    assert 0.5 < waited < 8
    wait_for_no_files(tmp_path)


def test_a_client_that_vanishes_mid_body_leaves_no_file(server, tmp_path):
    owner, call_id = recorded_call(server)
    partial_upload(server, owner, call_id).close()
    wait_for_no_files(tmp_path)
    call = httpx.get(f"{server.url}/api/v2/call/{call_id}", params={"workspaceId": owner["workspaceId"]},
                     headers={"Authorization": f"Bearer {owner['token']}"}).json()["data"]["result"]["call"]
    assert call["recording"] is None
