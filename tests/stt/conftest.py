"""A real speech server process, on a model converted once per test run from the bundled weights."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from stt.scoring import wer, words  # noqa: F401 (the speech tests import them from here)
from tests.conftest import ROOT, LiveServer, free_port, spawn, stop_server

FIXTURES = ROOT / "tests" / "fixtures"
JFK = "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country."


@dataclass
class SttServer(LiveServer):
    token: str

    @property
    def headers(self) -> dict:
        return {"Authorization": f"Bearer {self.token}"}


def start_stt(data_dir: Path, model: Path, **env_overrides) -> SttServer:
    port = free_port()
    env = {**os.environ, "HOST": "127.0.0.1", "STT_PORT": str(port), "DATA_DIR": str(data_dir),
           "STT_MODEL_PATH": str(model), "LOG_LEVEL": "WARNING", **{k: str(v) for k, v in env_overrides.items()}}
    env.pop("DATABASE_URL", None)
    url = f"http://127.0.0.1:{port}"
    process = spawn("stt.server", env, data_dir / f"stt-{port}.log", url + "/ready", 90)
    server = SttServer(url, env, process, token="")
    server.token = server.admin("bootstrap", "--workspace", "w", "--email", f"owner-{port}@example.com")["token"]
    return server


stop_stt = stop_server


@pytest.fixture(scope="module")
def stt(tmp_path_factory, converted_model):
    server = start_stt(tmp_path_factory.mktemp("stt"), converted_model)
    yield server
    stop_stt(server)
