"""A real speech server process, on a model converted once per test run from the bundled weights."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from stt.scoring import wer, words  # noqa: F401 (the speech tests import them from here)
from tests.conftest import ROOT, free_port

FIXTURES = ROOT / "tests" / "fixtures"
JFK = "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country."


@pytest.fixture(scope="session")
def converted_model(tmp_path_factory) -> Path:
    from stt.models import available_models, prepare
    data_dir = tmp_path_factory.mktemp("models")
    return prepare(available_models(data_dir)["svc-stt"])


@dataclass
class SttServer:
    url: str
    env: dict
    process: subprocess.Popen
    token: str

    @property
    def headers(self) -> dict:
        return {"Authorization": f"Bearer {self.token}"}

    def admin(self, *args: str) -> dict:
        import json
        out = subprocess.run([sys.executable, "-m", "api.admin", *args], env=self.env, cwd=ROOT,
                             capture_output=True, text=True, check=True)
        return json.loads(out.stdout)


def start_stt(data_dir: Path, model: Path, **env_overrides) -> SttServer:
    port = free_port()
    env = {**os.environ, "HOST": "127.0.0.1", "STT_PORT": str(port), "DATA_DIR": str(data_dir),
           "STT_MODEL_PATH": str(model), "LOG_LEVEL": "WARNING", **{k: str(v) for k, v in env_overrides.items()}}
    env.pop("DATABASE_URL", None)
    log = open(data_dir / f"stt-{port}.log", "w")
    process = subprocess.Popen([sys.executable, "-m", "stt.server"], env=env, cwd=ROOT, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError((data_dir / f"stt-{port}.log").read_text())
        try:
            if httpx.get(url + "/ready", timeout=1).status_code == 200:
                out = subprocess.run([sys.executable, "-m", "api.admin", "bootstrap", "--workspace", "w",
                                      "--email", f"owner-{port}@example.com"], env=env, cwd=ROOT,
                                     capture_output=True, text=True, check=True)
                import json
                return SttServer(url, env, process, json.loads(out.stdout)["token"])
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    process.kill()
    raise RuntimeError("speech server did not become ready within 90 s")


def stop_stt(server: SttServer) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.process.kill()


@pytest.fixture(scope="module")
def stt(tmp_path_factory, converted_model):
    server = start_stt(tmp_path_factory.mktemp("stt"), converted_model)
    yield server
    stop_stt(server)
