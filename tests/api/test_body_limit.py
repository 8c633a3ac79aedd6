"""A body over MAX_BODY_BYTES is refused with 413 before it is read, on a real server: the client
is answered while it still holds the rest of its body."""
from __future__ import annotations

import socket

import pytest

from tests.support.servers import start_server, stop_server

LIMIT = 1000


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = start_server(tmp_path_factory.mktemp("limit"), MAX_BODY_BYTES=LIMIT)
    yield server
    stop_server(server)


def open_request(server, headers: str) -> socket.socket:
    host, port = server.url.removeprefix("http://").split(":")
    connection = socket.create_connection((host, int(port)), timeout=5)
    connection.sendall((f"POST /api/v2/api-keys?workspaceId=4f1d2c3b-5a6e-4f70-8a9b-0c1d2e3f4a5b HTTP/1.1\r\nHost: {host}\r\n"
                        "Authorization: Bearer vak_unknown\r\nContent-Type: application/json\r\n"
                        f"{headers}\r\n").encode())
    return connection


def answer(connection: socket.socket, wait: float) -> bytes:
    """What the server has answered within ``wait`` seconds (b"" if nothing)."""
    connection.settimeout(wait)
    received = b""
    try:
        while b"\r\n\r\n" not in received or not received.rstrip().endswith(b"}"):
            chunk = connection.recv(65536)
            if not chunk:
                break
            received += chunk
    except TimeoutError:
        pass
    return received


def test_a_declared_length_over_the_limit_is_refused_before_any_byte_of_the_body(server):
    with open_request(server, "Content-Length: 52428800\r\n") as connection:
        response = answer(connection, 5)
    assert response.startswith(b"HTTP/1.1 413"), response[:200]
    assert b'"success":false' in response and str(LIMIT).encode() in response
    # At the limit itself the server reads on, waiting for the body.
    with open_request(server, f"Content-Length: {LIMIT}\r\n") as connection:
        assert answer(connection, 1) == b""


def chunk(size: int) -> bytes:
    return f"{size:x}\r\n".encode() + b"x" * size + b"\r\n"


def test_a_chunked_body_is_refused_once_it_passes_the_limit_without_waiting_for_its_end(server):
    with open_request(server, "Transfer-Encoding: chunked\r\n") as connection:
        connection.sendall(chunk(LIMIT // 2) + chunk(LIMIT // 2 + 1))  # one byte past; no final chunk
        response = answer(connection, 5)
    assert response.startswith(b"HTTP/1.1 413"), response[:200]
    with open_request(server, "Transfer-Encoding: chunked\r\n") as connection:
        connection.sendall(chunk(LIMIT // 2) + chunk(LIMIT // 2))  # at the limit: read on
        assert answer(connection, 1) == b""
