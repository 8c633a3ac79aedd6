"""One webhook attempt (api.webhook_delivery) against receivers that misbehave at the socket level:
the total timeout holds against an answer that trickles in, and what is kept of an answer is bounded."""
from __future__ import annotations

import socket
import threading
import time

import pytest

from api.webhook_delivery import post
from models.webhooks import addresses

SECRET = "whsec_" + "A" * 43


@pytest.fixture(autouse=True)
def local_receivers_allowed():
    addresses.configure(allow_http=True, allow_private=True)
    yield
    addresses.configure(allow_http=False, allow_private=False)


def raw_receiver(answer) -> tuple[str, threading.Event]:
    """A one-connection TCP server on 127.0.0.1 that reads the request and calls ``answer(conn)``."""
    server = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()

    def serve():
        conn, _ = server.accept()
        with conn:
            conn.settimeout(10)
            conn.recv(65536)
            try:
                answer(conn)
            except OSError:
                pass  # the sender hung up
        server.close()
        done.set()

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{server.getsockname()[1]}/hook", done


def test_an_answer_trickling_in_is_cut_off_at_the_total_timeout():
    def trickle(conn):
        for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok":  # one byte every 0.2 s: 8 s in all
            conn.sendall(bytes([byte]))
            time.sleep(0.2)

    url, done = raw_receiver(trickle)
    outcome = post(url, "evt", {"type": "ping"}, [SECRET], timeout_s=1.0)
    assert not outcome.succeeded and outcome.error == "No complete answer within 1 s."
    assert 900 <= outcome.latency_ms < 3000  # each read returned within its own timeout; the total did not
    assert done.wait(15)


def test_only_the_first_kilobyte_of_a_long_answer_is_read():
    def endless(conn):
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n")  # no length: until close
        for _ in range(200):
            conn.sendall(b"y" * 65536)  # 13 MB, unless the sender stops reading

    url, done = raw_receiver(endless)
    outcome = post(url, "evt", {"type": "ping"}, [SECRET], timeout_s=5.0)
    assert outcome.succeeded and outcome.response_body == "y" * 1024
    assert done.wait(15)
