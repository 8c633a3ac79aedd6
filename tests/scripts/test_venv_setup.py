"""scripts/_venv.sh, which scripts/serve, scripts/test and scripts/admin source: the first run makes
the venv and installs the checkout while saying so and showing pip's own progress; later runs are
silent and instant until setup.cfg changes.

The script runs for real on a small project of its own (one module, no dependencies), so that a
test takes seconds instead of the service's full install."""
from __future__ import annotations

import subprocess
import sys

from tests.support.servers import ROOT

SETUP_CFG = "[metadata]\nname = probe\nversion = {version}\n\n[options]\npy_modules = probe\n"
PYPROJECT = '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n'


def project(tmp_path, version: str = "0.1"):
    (tmp_path / "setup.cfg").write_text(SETUP_CFG.format(version=version))
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "probe.py").write_text("ANSWER = 42\n")
    return tmp_path


def source_venv_sh(directory, **env) -> subprocess.CompletedProcess:
    """``. scripts/_venv.sh`` in ``directory`` under the entry scripts' shell options."""
    environ = {"PATH": "/usr/bin:/bin", "HOME": str(directory), "VENV": str(directory / ".venv"),
               "PYTHON": sys.executable, **env}
    return subprocess.run(["bash", "-c", 'set -euo pipefail; . "$0"', str(ROOT / "scripts" / "_venv.sh")],
                          cwd=directory, env=environ, capture_output=True, text=True, timeout=300)


def stamps(directory) -> list[str]:
    return sorted(p.name for p in (directory / ".venv").glob(".installed-*"))


def test_the_first_run_says_what_it_does_and_shows_pips_output_then_later_runs_are_instant(tmp_path):
    directory = project(tmp_path)
    first = source_venv_sh(directory)
    assert first.returncode == 0, first.stderr
    assert first.stdout == "", "stdout belongs to the script (scripts/admin prints its JSON there)"
    assert "==> Creating" in first.stderr and "==> Installing this checkout" in first.stderr
    # pip's own lines, which --quiet would hide.
    assert "Successfully installed probe-0.1" in first.stderr
    assert "==> Installed in" in first.stderr.splitlines()[-1]
    assert len(stamps(directory)) == 1
    assert subprocess.run([directory / ".venv" / "bin" / "python", "-c", "import probe"], cwd="/").returncode == 0

    # Instant: nothing said means neither venv nor pip ran (no timing, which a loaded machine skews).
    again = source_venv_sh(directory)
    assert again.returncode == 0 and again.stdout == again.stderr == ""

    # setup.cfg changed: installed again into the same venv, its stamp replacing the old one.
    before = stamps(directory)
    (directory / "setup.cfg").write_text(SETUP_CFG.format(version="0.2"))
    changed = source_venv_sh(directory)
    assert changed.returncode == 0, changed.stderr
    assert "==> Creating" not in changed.stderr and "Successfully installed probe-0.2" in changed.stderr
    assert len(stamps(directory)) == 1 and stamps(directory) != before


def test_a_venv_left_without_pip_is_made_again(tmp_path):
    # What `python -m venv` leaves behind where ensurepip is missing (Debian without python3-venv).
    directory = project(tmp_path)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", directory / ".venv"], check=True)
    run = source_venv_sh(directory)
    assert run.returncode == 0, run.stderr
    assert "==> Creating" in run.stderr and "Successfully installed probe-0.1" in run.stderr


def test_without_a_usable_python_it_says_what_is_needed(tmp_path):
    directory = project(tmp_path)
    run = source_venv_sh(directory, PYTHON=str(tmp_path / "no-such-python"))
    assert run.returncode == 1
    assert run.stderr == "Python 3.11 or newer is needed (set PYTHON=/path/to/python3.11)\n"
    assert not (directory / ".venv").exists()
