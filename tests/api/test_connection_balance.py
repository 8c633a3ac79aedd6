"""Kept-alive connections spread over the API's workers (api.connection_balance): the decision on a
real shared table, then a real two-worker server that starts with every connection on one worker."""
from __future__ import annotations

import http.client
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from api import connection_balance
from api.connection_balance import CLOSE_INTERVAL_S, WorkerConnections
from scripts.benchmarks.harness import balancing_closes, connections_by_process
from tests.support.processes import children, wait_for
from tests.support.servers import start_server, stop_server


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(connection_balance, "monotonic", clock)
    return clock


@pytest.fixture
def table(tmp_path, monkeypatch):
    monkeypatch.delenv(connection_balance.TABLE_ENV, raising=False)
    path = tmp_path / "connections"
    connection_balance.prepare(path, workers=2)  # 4 slots
    monkeypatch.delenv(connection_balance.TABLE_ENV)
    return str(path)


def holding(worker: WorkerConnections, count: int) -> WorkerConnections:
    for _ in range(count):
        worker.opened()
    return worker


def write_slot(table: str, slot: int, pid: int, count: int) -> None:
    with open(table, "r+b") as file:
        file.seek(slot * 16)
        file.write(struct.pack("=qq", pid, count))


def read_slot(table: str, slot: int) -> tuple[int, int]:
    return struct.unpack_from("=qq", Path(table).read_bytes(), slot * 16)


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_worker_closes_one_connection_when_it_holds_two_more_than_another(table, clock):
    busy, idle = WorkerConnections(table), WorkerConnections(table)
    holding(idle, 7)
    holding(busy, 8)
    assert not busy.should_close() and not idle.should_close()  # one apart: as even as 15 can be
    busy.opened()  # 9 against 7
    assert busy.should_close()
    assert not idle.should_close()  # the one with fewer never closes


def test_at_most_one_close_per_interval(table, clock):
    busy, idle = WorkerConnections(table), WorkerConnections(table)
    holding(busy, 10)
    assert busy.should_close()
    clock.now += CLOSE_INTERVAL_S * 0.9
    assert not busy.should_close()
    clock.now += CLOSE_INTERVAL_S * 0.1
    assert busy.should_close()
    busy.closed()
    idle.opened()
    busy.closed()
    idle.opened()
    clock.now += CLOSE_INTERVAL_S
    assert busy.should_close()  # 8 against 2
    for _ in range(3):
        busy.closed()
        idle.opened()
    clock.now += CLOSE_INTERVAL_S
    assert not busy.should_close()  # 5 against 5


def test_two_connections_on_one_worker_and_none_on_the_other_are_split(table, clock):
    busy, _idle = WorkerConnections(table), WorkerConnections(table)
    busy.opened()
    assert not busy.should_close()  # a single connection stays where it is
    busy.opened()
    assert busy.should_close()


def test_a_worker_alone_never_closes(table, clock):
    alone = holding(WorkerConnections(table), 50)
    assert not alone.should_close()


def test_the_count_follows_connections_opened_and_closed(table):
    worker = WorkerConnections(table)
    holding(worker, 3)
    worker.closed()
    assert read_slot(table, 0) == (os.getpid(), 2)


def test_a_dead_workers_slot_draws_no_connection_and_is_freed(table, clock):
    survivor = holding(WorkerConnections(table), 6)  # slot 0
    write_slot(table, 1, dead_pid(), 0)  # killed while it held none: its count stays 0
    assert not survivor.should_close()
    assert read_slot(table, 1) == (0, 0)
    assert not survivor.should_close()


def test_a_replacement_takes_a_dead_workers_slot_and_a_full_table_turns_balancing_off(table):
    for slot in range(4):
        write_slot(table, slot, dead_pid() if slot == 2 else os.getppid(), 5)
    replacement = WorkerConnections(table)
    assert replacement.joined
    assert read_slot(table, 2) == (os.getpid(), 0)
    one_too_many = WorkerConnections(table)
    assert not one_too_many.joined and not holding(one_too_many, 9).should_close()


def test_leaving_frees_the_slot(table):
    worker = holding(WorkerConnections(table), 2)
    worker.leave()
    assert Path(table).read_bytes() == bytes(len(Path(table).read_bytes()))
    worker.closed()  # a connection ending after: nothing written
    assert Path(table).read_bytes() == bytes(len(Path(table).read_bytes()))


# --- a real server ------------------------------------------------------------------------

CONNECTIONS = 8


def workers_of(server) -> list[int]:
    return [pid for pid in children(server.process.pid)
            if b"resource_tracker" not in Path(f"/proc/{pid}/cmdline").read_bytes()]


class Client(threading.Thread):
    """One kept-alive connection, asking again and again; http.client reconnects on its own after
    an answer that says ``Connection: close``."""

    def __init__(self, port: int, token: str) -> None:
        super().__init__(daemon=True)
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        self.connection.connect()
        self.headers = {"Authorization": f"Bearer {token}"}
        self.statuses: list[int] = []
        self.closes = 0
        self.go = threading.Event()
        self.stop = threading.Event()
        self.error: Exception | None = None

    def run(self) -> None:
        self.go.wait()
        try:
            while not self.stop.is_set():
                self.connection.request("GET", "/api/v2/permissions", headers=self.headers)
                response = self.connection.getresponse()
                response.read()
                self.statuses.append(response.status)
                self.closes += response.getheader("connection", "") == "close"
        except Exception as error:  # noqa: BLE001 - reported by the test
            self.error = error


def test_connections_made_while_one_worker_could_not_accept_end_up_split_evenly(tmp_path):
    server = start_server(tmp_path, WORKERS=2, RATE_LIMITS_ENABLED="false")
    clients: list[Client] = []
    closes = counted_before = 0
    port = int(server.url.rsplit(":", 1)[1])
    try:
        token = server.admin("bootstrap", "--workspace", "Balance", "--email", "b@example.com")["token"]
        assert wait_for(lambda: len(workers_of(server)) == 2, 30)
        workers = workers_of(server)
        counted_before = balancing_closes(server.url)  # the clients' closes are counted from here
        # One worker stopped: the other accepts every connection.
        os.kill(workers[0], signal.SIGSTOP)
        try:
            clients = [Client(port, token) for _ in range(CONNECTIONS)]
            assert wait_for(lambda: connections_by_process(workers, port) == [CONNECTIONS], 10), \
                connections_by_process(workers, port)
        finally:
            os.kill(workers[0], signal.SIGCONT)
        for client in clients:
            client.start()
            client.go.set()
        assert wait_for(lambda: connections_by_process(workers, port) == [CONNECTIONS // 2] * 2, 30), \
            connections_by_process(workers, port)
        # Even: no more closes, however long the clients go on.
        closes = sum(client.closes for client in clients)
        asked = sum(len(client.statuses) for client in clients)
        assert wait_for(lambda: sum(len(client.statuses) for client in clients) >= asked + 50 * CONNECTIONS, 30)
        assert sum(client.closes for client in clients) == closes
        assert connections_by_process(workers, port) == [CONNECTIONS // 2] * 2
    finally:
        for client in clients:
            client.stop.set()
            client.go.set()
        for client in clients:
            client.join(15)
            client.connection.close()
        counted = None if not clients else balancing_closes(server.url) - counted_before
        stop_server(server)
    assert all(client.error is None for client in clients), [client.error for client in clients]
    assert closes >= CONNECTIONS // 2  # at least one per connection that moved
    # Counted as the clients saw them, those of their last requests too (as they stop one by one,
    # the split may be uneven for a moment).
    seen = sum(client.closes for client in clients)
    assert counted == seen, (counted, seen, closes)
    # Every request answered, none lost to a connection closing under it.
    assert {status for client in clients for status in client.statuses} == {200}


def table_of(workers: list[int]) -> str:
    """The table's path, from the environment the workers were started with."""
    environ = Path(f"/proc/{workers[0]}/environ").read_bytes().split(b"\0")
    return next(item.split(b"=", 1)[1].decode() for item in environ
                if item.startswith(connection_balance.TABLE_ENV.encode() + b"="))


def test_each_worker_counts_a_connection_only_while_it_lasts_however_it_ends(tmp_path):
    server = start_server(tmp_path, WORKERS=2, API_MAX_HEAD_BYTES=4096, API_HEAD_TIMEOUT_S=60)
    port = int(server.url.rsplit(":", 1)[1])
    try:
        assert wait_for(lambda: len(workers_of(server)) == 2, 30)
        workers = workers_of(server)
        table = table_of(workers)
        # A worker is a process before it joins the table: it joins once it has imported the app.
        assert wait_for(lambda: sorted(read_slot(table, slot)[0] for slot in range(4)) == [0, 0, *sorted(workers)],
                        30), [read_slot(table, slot) for slot in range(4)]

        def counted() -> list[int]:
            return sorted(count for _, count in (read_slot(table, slot) for slot in range(4)) if count)

        def exchange(payload: bytes) -> bytes:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.sendall(payload)
                return sock.recv(65536)

        for _ in range(6):
            assert exchange(b"GET /api/v2/openapi.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        for _ in range(4):  # the connection becomes the WebSocket protocol's, which refuses it
            assert exchange(b"GET /api/v2/permissions HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                            b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                            b"Sec-WebSocket-Version: 13\r\n\r\n").startswith(b"HTTP/1.1 403")
        for _ in range(4):
            assert exchange(b"GET /api/v2/\x00 HTTP/1.1\r\nHost: x\r\n\r\n").startswith(b"HTTP/1.1 400")
            assert exchange(b"GET / HTTP/1.1\r\nX: " + b"a" * 8000 + b"\r\n\r\n").startswith(b"HTTP/1.1 431")
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        try:
            assert wait_for(lambda: counted() == connections_by_process(workers, port)
                            and sum(counted()) == 3, 10), (counted(), connections_by_process(workers, port))
        finally:
            for sock in held:
                sock.close()
        assert wait_for(lambda: counted() == [], 10), counted()
    finally:
        stop_server(server)
