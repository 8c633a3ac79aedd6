"""scripts/admin: the operator's way to a first access token."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from contextlib import closing

import httpx

from tests.support.servers import ROOT


def admin(tmp_path, *args, database_url: str | None = None, stdin: str | None = None):
    env = {**os.environ, "DATA_DIR": str(tmp_path)}
    env.pop("DATABASE_URL", None)
    if database_url:
        env["DATABASE_URL"] = database_url
    return subprocess.run([sys.executable, "-m", "api.admin", *args], env=env, cwd=ROOT, capture_output=True, text=True,
                          input=stdin)


def workspace_names(database_url: str) -> list[str]:
    """Every workspace's name in the CLI's database, read with the driver alone."""
    query = "SELECT name FROM workspace ORDER BY created_at"
    if database_url.startswith("sqlite:///"):
        with closing(sqlite3.connect(database_url.removeprefix("sqlite:///"))) as conn:
            return [name for (name,) in conn.execute(query)]
    import psycopg2
    conn = psycopg2.connect(database_url)
    try:
        with conn.cursor() as cur:
            cur.execute(query)
            return [name for (name,) in cur.fetchall()]
    finally:
        conn.close()


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


def test_password_is_read_from_standard_input_and_stored_hashed(tmp_path):
    made = json.loads(admin(tmp_path, "bootstrap", "--workspace", "Acme", "--email", "ada@example.com").stdout)
    out = admin(tmp_path, "password", "--email", "ADA@example.com", stdin="correct horse battery staple\n")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"userId": made["userId"], "passwordSet": True}
    assert "correct horse" not in out.stdout + out.stderr
    with closing(sqlite3.connect(tmp_path / "service.sqlite3")) as conn:
        (stored,) = conn.execute("SELECT password_hash FROM user_password").fetchone()
    assert stored.startswith("$argon2id$") and "correct horse" not in stored
    short = admin(tmp_path, "password", "--email", "ada@example.com", stdin="eleven char\n")
    assert short.returncode == 2 and "12 to 256" in short.stderr and "eleven char" not in short.stderr
    unknown = admin(tmp_path, "password", "--email", "nobody@example.com", stdin="correct horse battery staple\n")
    assert unknown.returncode == 2 and "nobody@example.com" in unknown.stderr


def test_errors_go_to_stderr_with_a_nonzero_exit(tmp_path):
    out = admin(tmp_path, "token", "--email", "nobody@example.com")
    assert out.returncode == 2 and out.stdout == "" and "nobody@example.com" in out.stderr
    out = admin(tmp_path, "bootstrap", "--workspace", " ", "--email", "a@example.com")
    assert out.returncode == 2 and "workspace" in out.stderr


def test_bootstrap_refuses_a_workspace_name_already_taken(tmp_path, database_url):
    def bootstrap(name, email="ada@example.com", *flags):
        return admin(tmp_path, "bootstrap", "--workspace", name, "--email", email, *flags, database_url=database_url)

    first = bootstrap("Acme")
    assert first.returncode == 0, first.stderr
    first_id = json.loads(first.stdout)["workspaceId"]
    # The same name again, whoever asks and however it is cased or padded: refused, nothing made.
    for name, email in (("Acme", "ada@example.com"), ("ACME", "bob@example.com"), ("  acme ", "ada@example.com")):
        again = bootstrap(name, email)
        assert again.returncode == 2 and again.stdout == "", again.stderr
        assert f"a workspace named {name.strip()!r} already exists ({first_id})" in again.stderr
        assert "scripts/admin token --email" in again.stderr and "--force" in again.stderr
    assert workspace_names(database_url) == ["Acme"]
    # A name that differs by one character is another workspace.
    assert bootstrap("Acme2").returncode == 0
    # --force makes the second one on purpose, with an id of its own.
    forced = bootstrap("Acme", "ada@example.com", "--force")
    assert forced.returncode == 0, forced.stderr
    assert json.loads(forced.stdout)["workspaceId"] != first_id
    assert workspace_names(database_url) == ["Acme", "Acme2", "Acme"]


def test_bootstrap_help_explains_the_refusal_and_force(tmp_path):
    out = admin(tmp_path, "bootstrap", "--help")
    assert out.returncode == 0
    assert "already taken" in out.stdout and "--force" in out.stdout


def test_the_script_is_executable():
    assert os.access(ROOT / "scripts" / "admin", os.X_OK) and os.access(ROOT / "scripts" / "serve", os.X_OK)
