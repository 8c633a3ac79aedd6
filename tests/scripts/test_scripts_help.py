"""Every command in scripts/ starts: each answers --help with its usage and exit status 0, and every
benchmark module imports. A script broken by a change elsewhere (a name it imports renamed, an
option removed from a shared parser) fails here rather than on the next person who runs it.

The commands run as a user runs them, in a process of their own; the shell ones on a stand-in for
the checkout's .venv (this interpreter, and the stamp scripts/_venv.sh looks for), so that no test
installs anything."""
from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest

from tests.support.servers import ROOT

SCRIPTS = ROOT / "scripts"
BENCHMARKS = SCRIPTS / "benchmarks"
# scripts/test runs tox: its --help is pytest's, inside a tox environment of its own (minutes to build).
NOT_RUN = {"test"}
COMMANDS = sorted(path.name for path in SCRIPTS.iterdir()
                  if path.is_file() and os.access(path, os.X_OK) and path.name not in NOT_RUN)
MODULES = sorted(path.stem for path in BENCHMARKS.glob("*.py") if path.stem != "__init__")
# What the commands share, with no command of their own.
HELPERS = ("harness", "options", "heldout")


@pytest.fixture(scope="module")
def scripts_on_path():
    """scripts/ first on sys.path, as when a script runs: the package imports as ``benchmarks``."""
    sys.path.insert(0, str(SCRIPTS))
    yield
    sys.path.remove(str(SCRIPTS))


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A stand-in .venv: bin/python runs this interpreter, and the stamp of the current setup.cfg
    tells scripts/_venv.sh that nothing needs installing."""
    venv = tmp_path_factory.mktemp("venv")
    (venv / "bin").mkdir()
    python = venv / "bin" / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    checksum = subprocess.run(["cksum", "setup.cfg"], cwd=ROOT, capture_output=True, text=True, check=True)
    (venv / f".installed-{checksum.stdout.split()[0]}").touch()
    return venv


def test_the_commands_are_found():
    assert {"serve", "admin", "bench_api", "bench_calls", "bench_stream", "stream_audio"} <= set(COMMANDS)
    assert {"harness", "options", "bench_api", "bench_calls", "simulate_streaming"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_benchmark_module_imports(name, scripts_on_path):
    module = importlib.import_module(f"benchmarks.{name}")
    if name not in HELPERS:
        assert callable(module.main)
        assert (SCRIPTS / name).exists(), f"scripts/{name}, the command of benchmarks/{name}.py, is missing"


@pytest.mark.parametrize("name", [name for name in MODULES if name not in HELPERS])
def test_benchmark_main_answers_help(name, scripts_on_path, capsys):
    module = importlib.import_module(f"benchmarks.{name}")
    with pytest.raises(SystemExit) as exited:
        module.main(["--help"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: scripts/{name} ")


@pytest.mark.parametrize("name", COMMANDS)
def test_command_answers_help(name, venv):
    path = SCRIPTS / name
    shell = path.read_text().startswith("#!/usr/bin/env bash")
    # Python commands under this interpreter: their shebang's python3 is the system's, which would
    # switch to a .venv this checkout may not have.
    command = [str(path), "--help"] if shell else [sys.executable, str(path), "--help"]
    env = {**os.environ, "VENV": str(venv)}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: scripts/{name}"), done.stdout + done.stderr
