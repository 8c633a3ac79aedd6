"""The benchmark scripts' shared plumbing: percentiles, undo order, servers stopped as a group."""
from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import benchlib  # noqa: E402


def test_percentile_is_nearest_rank():
    values = [5, 1, 4, 2, 3]
    assert benchlib.percentile(values, 50) == 3
    assert benchlib.percentile(values, 0) == 1
    assert benchlib.percentile(values, 100) == 5
    assert benchlib.percentile(values, 99) == 5
    assert benchlib.percentile(values, 40) == 2  # exactly 2 of 5 at or below: no interpolation
    assert benchlib.percentile(list(range(1, 101)), 90) == 90
    assert benchlib.percentile([], 50) != benchlib.percentile([], 50)  # nan


def test_median_of_nothing_is_nan():
    assert benchlib.median([3, 1, 2]) == 2
    assert benchlib.median([]) != benchlib.median([])


def test_scope_undoes_only_its_own_steps_in_reverse_order():
    cleanup, done = benchlib.Cleanup(), []
    cleanup.push(lambda: done.append("outer"))
    with cleanup.scope():
        cleanup.push(lambda: done.append("first"))
        cleanup.push(lambda: 1 / 0)  # a failing step does not stop the others
        cleanup.push(lambda: done.append("last"))
    assert done == ["last", "first"]
    cleanup.run_all()
    assert done == ["last", "first", "outer"]


def test_pop_undoes_one_step_once():
    cleanup, done = benchlib.Cleanup(), []
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
    server = benchlib.Server([sys.executable, "-c", code], dict(os.environ), tmp_path / "server.log")
    deadline = time.monotonic() + 30
    while not (tmp_path / "server.log").read_text().strip() and time.monotonic() < deadline:
        time.sleep(0.05)
    worker_pid = int((tmp_path / "server.log").read_text().split()[0])
    benchlib.CLEANUP.pop(server.stop)
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
    server = benchlib.Server([sys.executable, "-c", "print('no such app'); raise SystemExit(3)"], dict(os.environ),
                             tmp_path / "server.log")
    with pytest.raises(RuntimeError, match="exited with 3(.|\n)*no such app"):
        benchlib.wait_ready(server, f"http://127.0.0.1:{benchlib.free_port()}/", timeout=10)
    benchlib.CLEANUP.pop(server.stop)


def test_service_env_leaves_unset_what_is_none(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgresql://elsewhere/db")
    env = benchlib.service_env(WORKERS=2, DATABASE_URL=None)
    assert "DATABASE_URL" not in env
    assert env["WORKERS"] == "2" and env["HOST"] == "127.0.0.1"
    assert env["DEFAULT_REQUESTS_PER_MINUTE"] == benchlib.UNLIMITED
