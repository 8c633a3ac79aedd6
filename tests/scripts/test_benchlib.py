"""The benchmark scripts' shared plumbing: percentiles, undo order, servers stopped as a group, the
load generator's figures."""
from __future__ import annotations

import http.server
import os
import shutil
import signal
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from benchmarks import harness  # noqa: E402

from tests.support.skips import skip_or_fail  # noqa: E402


def test_percentile_is_nearest_rank():
    values = [5, 1, 4, 2, 3]
    assert harness.percentile(values, 50) == 3
    assert harness.percentile(values, 0) == 1
    assert harness.percentile(values, 100) == 5
    assert harness.percentile(values, 99) == 5
    assert harness.percentile(values, 40) == 2  # exactly 2 of 5 at or below: no interpolation
    assert harness.percentile(list(range(1, 101)), 90) == 90
    assert harness.percentile([], 50) != harness.percentile([], 50)  # nan


def test_median_of_nothing_is_nan():
    assert harness.median([3, 1, 2]) == 2
    assert harness.median([]) != harness.median([])


def test_scope_undoes_only_its_own_steps_in_reverse_order():
    cleanup, done = harness.Cleanup(), []
    cleanup.push(lambda: done.append("outer"))
    with cleanup.scope():
        cleanup.push(lambda: done.append("first"))
        cleanup.push(lambda: 1 / 0)  # a failing step does not stop the others
        cleanup.push(lambda: done.append("last"))
    assert done == ["last", "first"]
    cleanup.run_all()
    assert done == ["last", "first", "outer"]


def test_pop_undoes_one_step_once():
    cleanup, done = harness.Cleanup(), []
    step = cleanup.push(lambda: done.append(1))
    cleanup.pop(step)
    cleanup.pop(step)
    cleanup.run_all()
    assert done == [1]


def test_server_stop_ends_its_whole_process_group(tmp_path):
    # A worker that ignores SIGTERM, left behind by its parent when that one stops: gone all the same.
    # The worker says its pid once its own SIGTERM handler is in place, however slow the machine.
    worker = "import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(os.getpid(), flush=True); time.sleep(60)"
    code = ("import subprocess, sys, time\n"
            f"worker = subprocess.Popen([sys.executable, '-c', {worker!r}])\n"
            "time.sleep(60)\n")
    server = harness.Server([sys.executable, "-c", code], dict(os.environ), tmp_path / "server.log")
    deadline = time.monotonic() + 30
    while not (tmp_path / "server.log").read_text().strip() and time.monotonic() < deadline:
        time.sleep(0.05)
    worker_pid = int((tmp_path / "server.log").read_text().split()[0])
    harness.CLEANUP.pop(server.stop)
    assert server.proc.poll() == -signal.SIGTERM
    for _ in range(100):
        if not _running(worker_pid):
            break
        time.sleep(0.05)
    assert not _running(worker_pid)


def _running(pid: int) -> bool:
    """Neither gone nor a zombie waiting for whichever init adopted it to reap it."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_wait_ready_reports_the_log_of_a_server_that_exits(tmp_path):
    server = harness.Server([sys.executable, "-c", "print('no such app'); raise SystemExit(3)"], dict(os.environ),
                             tmp_path / "server.log")
    with pytest.raises(RuntimeError, match="exited with 3(.|\n)*no such app"):
        harness.wait_ready(server, f"http://127.0.0.1:{harness.free_port()}/", timeout=10)
    harness.CLEANUP.pop(server.stop)


def test_service_env_leaves_unset_what_is_none(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgresql://elsewhere/db")
    env = harness.service_env(WORKERS=2, DATABASE_URL=None)
    assert "DATABASE_URL" not in env
    assert env["WORKERS"] == "2" and env["HOST"] == "127.0.0.1"
    assert env["DEFAULT_REQUESTS_PER_MINUTE"] == harness.UNLIMITED


class _Counting(http.server.BaseHTTPRequestHandler):
    """Keep-alive HTTP/1.1: 200 on /ok, 404 elsewhere; counts connections and requests."""
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # the head and the body are two writes
    connections = requests = 0
    counting = threading.Lock()  # one thread per connection: += alone could lose a count

    def setup(self):
        super().setup()
        with self.counting:
            type(self).connections += 1

    def do_GET(self):
        with self.counting:
            type(self).requests += 1
        body = b"ok"
        self.send_response(200 if self.path == "/ok" else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def counting_server():
    handler = type("Handler", (_Counting,), {})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler
    server.shutdown()
    server.server_close()


@pytest.fixture
def h2load(tmp_path):
    binary = shutil.which("h2load")
    if binary is None:
        skip_or_fail("needs h2load, scripts/bench_api's load generator: apt-get install nghttp2-client")
    return harness.H2load(binary, max_threads=1, timeout=10, scratch=tmp_path)


def test_h2load_measures_only_after_its_warmup_on_the_same_connections(h2load, counting_server):
    base, handler = counting_server
    result = h2load.run(f"{base}/ok", 3, 1, {"X-Probe": "1"}, warmup=1)
    assert result.errors == {}
    assert result.requests > 0 and result.seconds == 1
    assert 0 < result.p50_ms <= result.p99_ms
    # The warm-up's requests went to the server but are not in the result, and its three
    # connections carried the measured requests: no first request on a new connection is measured.
    assert handler.requests > result.requests
    assert handler.connections == 3


def test_h2load_counts_answers_other_than_2xx(h2load, counting_server):
    base, _ = counting_server
    result = h2load.run(f"{base}/missing", 1, 1, {})
    assert result.requests > 0
    assert result.errors == {"non-2xx": result.requests}


def test_connections_are_counted_where_they_were_accepted(counting_server):
    base, _ = counting_server
    port = int(base.rsplit(":", 1)[1])
    clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
    try:
        deadline = time.monotonic() + 5
        while harness.connections_by_process([os.getpid()], port) != [3] and time.monotonic() < deadline:
            time.sleep(0.01)  # accepted by the server's thread
        # This process holds both ends: only the three accepted ends are on the server's port.
        assert harness.connections_by_process([os.getpid()], port) == [3]
        assert harness.connections_by_process([os.getpid()], harness.free_port()) == []
    finally:
        for client in clients:
            client.close()
