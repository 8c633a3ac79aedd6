"""scripts/admin: the operator's way to a first access token."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx

from tests.conftest import ROOT


def admin(tmp_path, *args):
    env = {**os.environ, "DATA_DIR": str(tmp_path)}
    env.pop("DATABASE_URL", None)
    return subprocess.run([sys.executable, "-m", "api.admin", *args], env=env, cwd=ROOT, capture_output=True, text=True)


def test_bootstrap_prints_one_json_object_and_nothing_else(tmp_path):
    out = admin(tmp_path, "bootstrap", "--workspace", "Acme", "--email", "Ada@Example.com")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1
    result = json.loads(lines[0])
    assert set(result) == {"workspaceId", "userId", "token"} and result["token"].startswith("vat_")
    assert result["token"] not in out.stderr


def test_token_issues_a_new_working_token(tmp_path, live_server):
    first = live_server.admin("bootstrap", "--workspace", "Acme", "--email", "ada@example.com")
    second = live_server.admin("token", "--email", "ADA@example.com")
    assert second["userId"] == first["userId"] and second["token"] != first["token"]
    for token in (first["token"], second["token"]):
        r = httpx.get(f"{live_server.url}/api/v2/api-keys", params={"workspaceId": first["workspaceId"]},
                      headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 200


def test_errors_go_to_stderr_with_a_nonzero_exit(tmp_path):
    out = admin(tmp_path, "token", "--email", "nobody@example.com")
    assert out.returncode == 2 and out.stdout == "" and "nobody@example.com" in out.stderr
    out = admin(tmp_path, "bootstrap", "--workspace", " ", "--email", "a@example.com")
    assert out.returncode == 2 and "workspace" in out.stderr


def test_the_script_is_executable():
    assert os.access(ROOT / "scripts" / "admin", os.X_OK) and os.access(ROOT / "scripts" / "serve", os.X_OK)
