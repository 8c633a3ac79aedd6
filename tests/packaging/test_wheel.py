"""The wheel carries the whole service: built with ``pip wheel``, installed into a fresh virtual
environment, its console commands start both servers and run the operator commands from an empty
directory, with no checkout on the import path.

The environment gets the project's dependencies from the running test environment (one line in a
.pth file naming its site-packages) rather than from the network, so the test stays fast and
offline. That directory holds only third-party packages (the project itself is installed there in
editable mode, through a .pth file that Python reads only in a site directory, not in one a .pth
names), so every module and data file of the project must come from the wheel.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
from pathlib import Path

import httpx
import pytest

from tests.support.servers import ROOT, free_port, wait_until_ready

PACKAGES = ("api", "core", "handlers", "models", "openapi", "stt")


def run(*command, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, **kwargs)
    assert result.returncode == 0, f"{command}:\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh virtual environment with the wheel installed; its bin directory."""
    work = tmp_path_factory.mktemp("wheel")
    # From a copy of the sources, as a fresh checkout has them: setuptools would also pack whatever
    # an earlier build left in the checkout's build/ directory.
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".tox", ".venv", "build", "data", "*.egg-info", "__pycache__", "node_modules"))
    # As a user builds it (without fetching the build backend again: the test environment has it).
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--wheel-dir", str(work / "dist"),
        str(source), cwd=work)
    wheel, = (work / "dist").glob("voice_agent_backend-*.whl")
    venv = work / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", str(venv))
    python = venv / "bin" / "python"
    run(sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", str(wheel))
    site_packages = Path(run(str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))").stdout.strip())
    (site_packages / "dependencies-from-the-test-environment.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return venv / "bin"


def clean_env(**extra: str) -> dict:
    """The environment without anything that would point the commands at the checkout or at a
    configured database: what a fresh shell has."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "DATABASE_URL", "DATA_DIR", "VIRTUAL_ENV", "PYTHONHOME")}
    return {**env, **extra}


def test_the_wheel_holds_every_package_and_the_contract(installed, tmp_path):
    probe = ("import importlib, json, sys; "
             f"print(json.dumps({{n: importlib.import_module(n).__file__ for n in {PACKAGES!r}}}))")
    where = json.loads(run(str(installed / "python"), "-c", probe, cwd=tmp_path, env=clean_env()).stdout)
    prefix = str(installed.parent)
    assert all(path.startswith(prefix) for path in where.values()), where
    check = ("from api.contract import SPEC_DIR, operations; from models.configs.schemas import defaults; "
             "print(SPEC_DIR, len(operations()), sorted(defaults('agent'))[:1])")
    out = run(str(installed / "python"), "-c", check, cwd=tmp_path, env=clean_env()).stdout
    assert out.startswith(prefix) and int(out.split()[1]) > 50, out


def test_console_commands_start_both_servers_and_bootstrap_from_an_empty_directory(installed, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    api_port, stt_port = free_port(), free_port()
    # Nothing else is configured: SQLite and the data directory are the defaults, under ./data.
    env = clean_env(HOST="127.0.0.1", API_PORT=str(api_port), STT_PORT=str(stt_port), STT_ENABLED="true",
                    LOG_LEVEL="WARNING", WORKERS="1")
    log = tmp_path / "serve.log"
    with open(log, "w") as out:
        server = subprocess.Popen([str(installed / "voice-agent-serve")], cwd=empty, env=env, stdout=out, stderr=out)
    try:
        api, stt = f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{stt_port}"
        try:
            wait_until_ready(api + "/api/v2/openapi.json", 60)
            wait_until_ready(stt + "/ready", 120)
        except AssertionError:
            raise AssertionError(log.read_text())
        assert (empty / "data" / "service.sqlite3").is_file()

        admin = run(str(installed / "voice-agent-admin"), "bootstrap", "--workspace", "Acme", "--email",
                    "owner@example.com", cwd=empty, env=env)
        owner = json.loads(admin.stdout)
        headers = {"Authorization": f"Bearer {owner['token']}"}
        permissions = httpx.get(api + "/api/v2/permissions", headers=headers, timeout=10)
        assert permissions.status_code == 200, permissions.text
        # The contract is the installed one, served whole; the speech server knows the same token.
        assert len(httpx.get(api + "/api/v2/openapi.json", timeout=10).json()["paths"]) > 50
        models = httpx.get(stt + "/v1/models", headers=headers, timeout=10)
        assert models.status_code == 200 and models.json()["data"], models.text
        demo = httpx.get(stt + "/demo", timeout=10)
        assert demo.status_code == 200 and "<html" in demo.text.lower()

        # The same command, run again for the name it already made, explains itself by its own name.
        again = subprocess.run([str(installed / "voice-agent-admin"), "bootstrap", "--workspace", "Acme",
                                "--email", "owner@example.com"], cwd=empty, env=env, capture_output=True, text=True)
        assert again.returncode == 2 and "voice-agent-admin token --email" in again.stderr, again.stderr
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            code = server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            raise
    assert code == 0, log.read_text()
    for port in (api_port, stt_port):
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"http://127.0.0.1:{port}/", timeout=2)
