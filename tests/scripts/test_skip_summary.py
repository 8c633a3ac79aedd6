"""scripts/test ends with what it skipped and why, so that a run missing PostgreSQL or Chromium is
not taken for a pass; with REQUIRE_ALL_TESTS=1 (as in .ci/run) every skip fails instead.

Each test runs pytest in a subprocess on a small generated test file, with the suite's conftest
loaded as a plugin: the hooks under test are the ones the real suite runs with."""
from __future__ import annotations

import os
import subprocess
import sys

from tests.support.servers import ROOT

TESTS = '''
import pytest
from tests.support.skips import skip_or_fail

def test_passes():
    pass

@pytest.mark.parametrize("n", [1, 2, 3])
def test_needs_chromium(n):
    skip_or_fail("needs Chromium: apt-get install chromium chromium-driver")

def test_skips_plainly():
    pytest.skip("no audio device")

def test_needs_postgres(postgres_server_url):
    pass

@pytest.mark.xfail(reason="a known bug", strict=True)
def test_known_bug():
    assert False
'''


def run_pytest(tmp_path, source: str, **env) -> subprocess.CompletedProcess:
    (tmp_path / "test_generated.py").write_text(source)
    # An ini file of its own, with the options of the checkout's setup.cfg that shape the report.
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -ra\n")
    environ = {k: v for k, v in os.environ.items() if k not in ("REQUIRE_ALL_TESTS", "TEST_DATABASE_URL")}
    environ.update(env, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider",
                           "--color=no", str(tmp_path)],
                          cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=120)


def summary(output: str) -> list[str]:
    """The skip summary's lines from its heading up to the final counts, blank lines left out."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if "skipped: not run, so not passed" in line)
    return [line for line in lines[start:-1] if line.strip()]


def test_skips_are_listed_last_by_reason_with_counts_and_how_to_provide_them(tmp_path):
    run = run_pytest(tmp_path, TESTS)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = summary(run.stdout)
    assert "5 skipped: not run, so not passed" in lines[0]
    assert lines[1:5] == [
        "tests  reason",
        "    3  needs Chromium: apt-get install chromium chromium-driver",
        "    1  no audio device",
        "    1  PostgreSQL tests need TEST_DATABASE_URL=postgresql://user@host:port/db",
    ]
    assert "REQUIRE_ALL_TESTS=1" in lines[5]
    # Last before the counts: after pytest's own per-file list of skips, nothing to scroll past.
    assert len(lines) == 6 and run.stdout.index("short test summary info") < run.stdout.index(lines[0])
    assert "1 passed, 5 skipped, 1 xfailed" in run.stdout.splitlines()[-1]


def test_a_run_without_skips_prints_no_summary(tmp_path):
    run = run_pytest(tmp_path, "def test_passes():\n    pass\n\n"
                               "def test_has_postgres(postgres_server_url):\n    pass\n",
                     TEST_DATABASE_URL="postgresql://postgres@127.0.0.1:5432/test")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "not run, so not passed" not in run.stdout
    assert "2 passed" in run.stdout.splitlines()[-1]


def test_require_all_tests_turns_every_skip_into_a_failure(tmp_path):
    run = run_pytest(tmp_path, TESTS, REQUIRE_ALL_TESTS="1")
    assert run.returncode == 1, run.stdout + run.stderr
    last = run.stdout.splitlines()[-1]
    # The three through skip_or_fail and the plain skip fail; the missing database is an error in
    # its fixture; the expected failure stays expected.
    assert "4 failed, 1 passed, 1 xfailed, 1 error" in last and "skipped" not in last
    assert "not run, so not passed" not in run.stdout
    assert "no audio device (REQUIRE_ALL_TESTS=1 turns this skip into a failure)" in run.stdout
    assert "TEST_DATABASE_URL=postgresql://user@host:port/db (REQUIRE_ALL_TESTS=1" in run.stdout
