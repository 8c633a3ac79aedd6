"""Real server processes for the tests that need one: the management API as scripts/serve starts it,
on a free port, stopped by the test."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LiveServer:
    url: str
    env: dict
    process: subprocess.Popen

    def admin(self, *args: str) -> dict:
        import json
        out = subprocess.run([sys.executable, "-m", "api.admin", *args], env=self.env, cwd=ROOT,
                             capture_output=True, text=True, check=True)
        return json.loads(out.stdout)


def spawn(module: str, env: dict, log_path: Path, ready_url: str, timeout: float) -> subprocess.Popen:
    """Starts ``python -m module`` and returns once ``ready_url`` answers 200; its output goes to
    ``log_path``, which the error quotes if the process dies first."""
    with open(log_path, "w") as log:
        process = subprocess.Popen([sys.executable, "-m", module], env=env, cwd=ROOT, stdout=log, stderr=log)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{module} exited: {log_path.read_text()}")
        try:
            if httpx.get(ready_url, timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"{module} was not ready within {timeout:.0f} s")


def wait_until_ready(url: str, seconds: float) -> None:
    """Returns once ``url`` answers 200 (a server started by another process: the speech server
    that api.serve starts beside itself); fails the test after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"{url} did not answer 200 within {seconds:g} s")


def start_server(tmp_path, **env_overrides) -> LiveServer:
    port = free_port()
    env = {**os.environ, "HOST": "127.0.0.1", "API_PORT": str(port), "DATA_DIR": str(tmp_path / "data"),
           "LOG_LEVEL": "WARNING", "STT_ENABLED": "false", "TRANSCRIPTION_WORKERS": "0", "WEBHOOK_WORKERS": "0",
           **{k: str(v) for k, v in env_overrides.items()}}
    url = f"http://127.0.0.1:{port}"
    process = spawn("api.serve", env, tmp_path / f"server-{port}.log", url + "/api/v2/openapi.json", 60)
    return LiveServer(url, env, process)


def stop_server(server: LiveServer) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.process.kill()
