"""api.serve as users run it: its processes end with it, and its responses name no server software."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx

from tests.support.processes import descendants, wait_for
from tests.support.servers import free_port, start_server, stop_server


def running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie waits on whatever reaps in this container)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as a restarted server binds
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_killing_the_master_ends_its_workers_and_the_speech_server_and_frees_the_ports(tmp_path):
    stt_port = free_port()
    server = start_server(tmp_path, WORKERS=2, STT_ENABLED="true", STT_PORT=stt_port)
    spawned = set()
    try:
        assert wait_for(lambda: _ready(f"http://127.0.0.1:{stt_port}/ready"), 60), "the speech server never got ready"
        api_port = int(server.url.rsplit(":", 1)[1])
        spawned = descendants(server.process.pid)
        # Two workers, the speech server, and multiprocessing's resource tracker.
        assert len(spawned) >= 3 and all(running(pid) for pid in spawned), spawned
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(10)
        # The kernel signals each child at once; a worker then shuts down gracefully (no request open).
        assert wait_for(lambda: not any(running(pid) for pid in spawned), 8), \
            [Path(f"/proc/{pid}/cmdline").read_text() for pid in spawned if running(pid)]
        assert port_is_free(api_port) and port_is_free(stt_port)
    finally:
        # Orphans, if the test failed: what was recorded, since a dead master has no children.
        for pid in spawned | descendants(server.process.pid) | {server.process.pid}:
            if running(pid):
                os.kill(pid, signal.SIGKILL)


def _ready(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def test_responses_name_no_server_software(tmp_path):
    server = start_server(tmp_path, WORKERS=2)
    try:
        for path in ("/api/v2/openapi.json", "/api/v2/permissions", "/api/v2/no-such-path"):
            response = httpx.get(server.url + path)
            assert "server" not in response.headers, (path, response.headers)
            assert response.headers["x-request-id"]
    finally:
        stop_server(server)


def test_a_server_starts_without_a_warning(tmp_path):
    server = start_server(tmp_path, WORKERS=2)
    try:
        assert httpx.get(f"{server.url}/api/v2/openapi.json").status_code == 200
    finally:
        stop_server(server)
    log = "".join(path.read_text() for path in tmp_path.glob("server-*.log"))
    assert "Warning" not in log and "WARNING" not in log, log


def test_starlettes_warning_about_its_test_client_is_silenced_where_connexion_triggers_it():
    # Only where httpx2 is missing (a fresh install, as scripts/serve makes) does importing
    # connexion warn; here the warning is raised as Starlette raises it.
    code = ("import warnings, api\n"
            "from starlette.exceptions import StarletteDeprecationWarning\n"
            "warnings.warn('Using `httpx` with `starlette.testclient` is deprecated; install `httpx2` instead.',"
            " StarletteDeprecationWarning)\n"
            "warnings.warn('another warning', StarletteDeprecationWarning)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "testclient" not in done.stderr and "another warning" in done.stderr, done.stderr


def test_each_worker_writes_its_last_log_lines_when_sigterm_stops_it(tmp_path):
    """Lines are written in batches; a worker of several ends by the SIGTERM uvicorn raises again
    once it has shut down, so its shutdown writes each line at once, up to the last."""
    server = start_server(tmp_path, WORKERS=2, LOG_LEVEL="INFO")
    try:
        assert httpx.get(f"{server.url}/health").status_code == 200
    finally:
        stop_server(server)
    log = "".join(path.read_text() for path in tmp_path.glob("server-*.log"))
    workers = {line.rsplit("[", 1)[1] for line in log.splitlines() if "Started server process" in line}
    finished = {line.rsplit("[", 1)[1] for line in log.splitlines() if "Finished server process" in line}
    assert len(workers) == 2 and finished == workers, log
    assert log.count("Application shutdown complete") == 2, log
