"""A request's head (its line and headers) has a deadline and a size bound on a real server
(api.http_protocol): a client that sends nothing, or dribbles bytes, gets 408 at the deadline; a
head over API_MAX_HEAD_BYTES gets 431; kept-alive connections and large bodies are served as before.
A body that goes quiet for API_BODY_TIMEOUT_S gets 408 (api.body_limit).

Times are asserted with wide upper margins: these run on loaded machines."""
from __future__ import annotations

import select
import socket
import time

import pytest

from tests.support.servers import start_server, stop_server

HEAD_TIMEOUT = 1.0
BODY_TIMEOUT = 2.0
MAX_HEAD = 8192
MARGIN = 5.0  # seconds a loaded machine may add to a timer before a test calls it broken


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = start_server(tmp_path_factory.mktemp("slow"), RATE_LIMITS_ENABLED="false",
                          API_HEAD_TIMEOUT_S=HEAD_TIMEOUT, API_MAX_HEAD_BYTES=MAX_HEAD,
                          API_BODY_TIMEOUT_S=BODY_TIMEOUT)
    yield server
    stop_server(server)


def connect(server) -> socket.socket:
    host, port = server.url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=HEAD_TIMEOUT + MARGIN)


def until_closed(connection: socket.socket, since: float,
                 wait: float = HEAD_TIMEOUT + MARGIN) -> tuple[bytes, float | None]:
    """All the server sends until it closes, and when it closed (seconds after ``since``; None if
    it did not within ``wait`` of ``since``)."""
    received = b""
    while (left := since + wait - time.monotonic()) > 0:
        connection.settimeout(left)
        try:
            chunk = connection.recv(65536)
        except TimeoutError:
            break
        if not chunk:
            return received, time.monotonic() - since
        received += chunk
    return received, None


def read_response(connection: socket.socket) -> tuple[int, bytes]:
    """One response with a Content-Length: its status and body."""
    connection.settimeout(HEAD_TIMEOUT + MARGIN)
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = connection.recv(65536)
        assert chunk, f"closed before a response: {received[:200]!r}"
        received += chunk
    head, body = received.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    length = int(next(line.split(":", 1)[1] for line in lines if line.lower().startswith("content-length:")))
    while len(body) < length:
        chunk = connection.recv(65536)
        assert chunk, "closed within a response"
        body += chunk
    assert len(body) == length, "more than one response"
    return int(lines[0].split()[1]), body


def assert_refused(response: bytes, status: int) -> None:
    assert response.startswith(f"HTTP/1.1 {status} ".encode()), response[:200]
    assert b"\r\nconnection: close\r\n" in response.lower()
    assert response.endswith(b"}") and b'"success":false' in response


def get(path: str = "/api/v2/openapi.json", close: bool = False) -> bytes:
    return (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + ("Connection: close\r\n" if close else "") + "\r\n").encode()


# --- the deadline ------------------------------------------------------------------------------

def assert_timed_out(closed_after: float | None, response: bytes) -> None:
    assert closed_after is not None, f"still open {HEAD_TIMEOUT + MARGIN} s after its deadline of {HEAD_TIMEOUT} s"
    assert closed_after >= HEAD_TIMEOUT / 2, f"closed after {closed_after:.2f} s, before its deadline"
    assert_refused(response, 408)


def test_a_connection_that_sends_nothing_gets_408_and_is_closed_at_the_head_timeout(server):
    with connect(server) as connection:
        opened = time.monotonic()
        response, closed_after = until_closed(connection, opened)
    assert_timed_out(closed_after, response)


def dribble(connection: socket.socket, head: bytes, since: float) -> tuple[bytes, float | None, int]:
    """Sends ``head`` a byte every 0.2 s until the server answers or closes: what it answered, when
    it closed (after ``since``), and how many bytes were sent."""
    sent = 0
    while time.monotonic() - since < HEAD_TIMEOUT + MARGIN and sent < len(head):
        # Stop sending once the server answered: a byte sent to a closed socket resets it, and
        # the reset may discard the answer before it is read.
        if select.select([connection], [], [], 0.2)[0]:
            break
        connection.sendall(head[sent:sent + 1])
        sent += 1
    response, closed_after = until_closed(connection, since)
    return response, closed_after, sent


def test_a_head_sent_a_byte_at_a_time_is_cut_at_the_deadline_though_bytes_keep_coming(server):
    head = get()[:-2] + b"X-Slow: " + b"a" * 1000 + b"\r\n\r\n"  # far longer than the time allows
    with connect(server) as connection:
        opened = time.monotonic()
        response, closed_after, sent = dribble(connection, head, opened)
    assert sent >= 3, "the test did not keep sending"
    assert_timed_out(closed_after, response)


# --- keep-alive ----------------------------------------------------------------------------------

def test_each_exchange_on_a_kept_alive_connection_starts_a_new_deadline_for_the_next_head(server):
    with connect(server) as connection:
        opened = time.monotonic()
        time.sleep(HEAD_TIMEOUT * 0.6)
        connection.sendall(get())
        assert read_response(connection)[0] == 200
        time.sleep(HEAD_TIMEOUT * 0.6)
        # Past the connection's first deadline: the previous response started a new one.
        assert time.monotonic() - opened > HEAD_TIMEOUT
        connection.sendall(get())
        assert read_response(connection)[0] == 200
        answered = time.monotonic()
        # A next request that starts and stalls gets the 408 of a deadline counted from that answer.
        head = get()[:-2] + b"X-Slow: " + b"a" * 1000 + b"\r\n\r\n"
        response, closed_after, sent = dribble(connection, head, answered)
    assert sent >= 3
    assert_timed_out(closed_after, response)


def test_an_idle_kept_alive_connection_is_closed_at_the_head_timeout_without_an_answer(server):
    with connect(server) as connection:
        connection.sendall(get())
        assert read_response(connection)[0] == 200
        answered = time.monotonic()
        response, closed_after = until_closed(connection, answered)
    # Not a 408: the client may be sending its next request as the server closes, and would read
    # an unasked answer as the answer to it. Before uvicorn's keep-alive (5 s) would close it.
    assert response == b""
    assert closed_after is not None and HEAD_TIMEOUT / 2 <= closed_after < 4.5, closed_after


def test_after_an_answer_given_before_the_body_the_deadline_starts_once_the_body_is_read(server):
    with connect(server) as connection:
        # Over MAX_BODY_BYTES by its declared length: answered 413 before any byte of the body.
        connection.sendall(b"POST /api/v2/api-keys?workspaceId=w HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                           b"Content-Type: application/json\r\nContent-Length: 2000000\r\n\r\n")
        assert read_response(connection)[0] == 413
        # The body goes on arriving for longer than the head timeout: no 408 cuts it.
        for _ in range(4):
            connection.sendall(b" " * 500_000)
            time.sleep(HEAD_TIMEOUT * 0.4)
        response, closed_after = until_closed(connection, time.monotonic())
    assert response == b""
    assert closed_after is not None


def accept_head(length: int) -> bytes:
    # An unauthenticated operation: nothing but the body stands between a client and the handler.
    return (f"POST /api/v2/invitations/accept HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n").encode()


def test_a_json_body_that_stops_arriving_gets_408_at_the_body_timeout_and_is_closed(server):
    with connect(server) as connection:
        connection.sendall(accept_head(100) + b'{"token": ')
        sent = time.monotonic()
        response, closed_after = until_closed(connection, sent, wait=BODY_TIMEOUT + MARGIN)
    assert closed_after is not None, f"still open {BODY_TIMEOUT + MARGIN} s after a body went quiet"
    assert closed_after >= BODY_TIMEOUT / 2, f"closed after {closed_after:.2f} s, before the body timeout"
    assert_refused(response, 408)
    assert b"The request body sent nothing for 2 seconds" in response


def test_a_json_body_that_keeps_arriving_past_the_body_timeout_is_read_to_its_end(server):
    body = b'{"token": "vai_nope"}'
    with connect(server) as connection:
        connection.sendall(accept_head(len(body)))
        for piece in range(0, len(body), 3):  # 7 pieces, 0.5 s apart: 3.5 s in all, no gap of 2 s
            connection.sendall(body[piece:piece + 3])
            time.sleep(BODY_TIMEOUT / 4)
        status, answer = read_response(connection)
    assert status == 400 and b'"success":false' in answer, answer


@pytest.mark.slow  # waits out the default timers
def test_with_the_default_head_timeout_keep_alive_is_as_uvicorn_keeps_it(tmp_path):
    server = start_server(tmp_path, RATE_LIMITS_ENABLED="false")  # API_HEAD_TIMEOUT_S 10 > keep-alive 5
    try:
        with connect(server) as connection:
            connection.sendall(get())
            assert read_response(connection)[0] == 200
            connection.sendall(get())
            assert read_response(connection)[0] == 200
            answered = time.monotonic()
            response, closed_after = until_closed(connection, answered, 5 + MARGIN)
        assert response == b""
        assert closed_after is not None and 4 <= closed_after, closed_after
    finally:
        stop_server(server)


# --- the size bound ----------------------------------------------------------------------------

def head_of(size: int, path: str = "/api/v2/openapi.json") -> bytes:
    """A request head of exactly ``size`` bytes: request line, header lines and the blank line,
    CRLFs included."""
    start = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nX-Pad: ".encode()
    end = b"\r\n\r\n"
    head = start + b"a" * (size - len(start) - len(end)) + end
    assert len(head) == size
    return head


def send_in(connection: socket.socket, data: bytes, piece: int | None) -> None:
    if piece is None:
        connection.sendall(data)
        return
    for at in range(0, len(data), piece):
        connection.sendall(data[at:at + piece])
        time.sleep(0.01)  # separate reads on the server


@pytest.mark.parametrize("piece", [None, 1000], ids=["at-once", "in-pieces"])
def test_a_head_at_the_bound_is_served_and_one_byte_more_gets_431(server, piece):
    with connect(server) as connection:
        send_in(connection, head_of(MAX_HEAD), piece)
        status, body = read_response(connection)
    assert status == 200 and body.startswith(b'{"openapi"')
    with connect(server) as connection:
        send_in(connection, head_of(MAX_HEAD + 1), piece)
        response, closed_after = until_closed(connection, time.monotonic())
    assert closed_after is not None
    assert_refused(response, 431)
    assert str(MAX_HEAD).encode() in response


@pytest.mark.parametrize("head", [
    b"GET /api/v2/permis\x00sions HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"GET /api/v2/permissions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \x00\r\n\r\n",
    b"GET /api/v2/permissions?workspaceId=\x01 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"NOT HTTP AT ALL\r\n\r\n",
], ids=["nul-in-path", "nul-in-header", "control-in-query", "not-http"])
def test_a_head_the_parser_refuses_gets_400_in_the_envelope_and_is_closed(server, head):
    with connect(server) as connection:
        connection.sendall(head)
        response, closed_after = until_closed(connection, time.monotonic())
    assert closed_after is not None
    assert_refused(response, 400)
    assert b"not valid HTTP/1.1" in response


def test_a_head_that_never_ends_is_refused_once_it_passes_the_bound(server):
    with connect(server) as connection:
        connection.sendall(b"GET /api/v2/openapi.json HTTP/1.1\r\nX-Pad: " + b"a" * MAX_HEAD)
        response, closed_after = until_closed(connection, time.monotonic())
    assert closed_after is not None
    assert_refused(response, 431)  # not the 408 of the deadline


def test_a_large_body_sent_with_a_head_near_the_bound_is_not_taken_for_a_head(server):
    body = b'{"name": "' + b"x" * 999_980 + b'"}'
    start = (f"POST /api/v2/api-keys?workspaceId=w HTTP/1.1\r\nHost: 127.0.0.1\r\n"
             f"Authorization: Bearer vak_unknown\r\nContent-Type: application/json\r\n"
             f"Content-Length: {len(body)}\r\nX-Pad: ").encode()
    head = start + b"a" * (MAX_HEAD - 100 - len(start)) + b"\r\n\r\n"
    with connect(server) as connection:
        connection.sendall(head + body)  # one write: the server's first read holds head and body
        status, answer = read_response(connection)
    assert status not in (408, 431, 500), answer
    assert answer.startswith(b'{"success"')


# --- several workers ---------------------------------------------------------------------------

def test_with_two_workers_every_connection_has_the_deadline(tmp_path):
    server = start_server(tmp_path, WORKERS=2, API_HEAD_TIMEOUT_S=HEAD_TIMEOUT)
    try:
        # Several connections, so that both workers likely accept some.
        connections = [connect(server) for _ in range(6)]
        opened = time.monotonic()
        for connection in connections:
            with connection:
                response, closed_after = until_closed(connection, opened)
            assert_timed_out(closed_after, response)
    finally:
        stop_server(server)
