"""Fixtures: a real app on a real database (SQLite always, PostgreSQL when TEST_DATABASE_URL is
set), and a real server process for the tests that need one. Test data comes from
tests/support/factories/, helpers that are not fixtures from tests/support/.

A run ends with what it skipped, grouped by reason (a skipped test did not pass); with
REQUIRE_ALL_TESTS=1, as in .ci/run, every skip is a failure instead."""
from __future__ import annotations

import os
import uuid
from collections import Counter
from pathlib import Path
from urllib.parse import urlparse, urlunparse

import pytest
from starlette.testclient import TestClient

from tests.support import factories
from tests.support.chat_completions_server import ChatCompletionsServer
from tests.support.conversations import Sides
from tests.support.factories import Actor
from tests.support.servers import start_server, stop_server
from tests.support.skips import STRICT, skip_or_fail

ROOT = Path(__file__).resolve().parent.parent
PG_URL = os.environ.get("TEST_DATABASE_URL")


# --- slow suites ----------------------------------------------------------------------------

def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true",
                     help="also run the tests marked slow (real-time streaming, soak); run them before "
                          "calling a change done")


def pytest_collection_modifyitems(config, items):
    """Slow tests are deselected, not skipped, by default: REQUIRE_ALL_TESTS=1 fails every skip, and
    a deselected test is a choice of the run, not a missing prerequisite. The summary says how many."""
    if config.getoption("--run-slow"):
        _slow_files_first(items)
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        items[:] = [item for item in items if not item.get_closest_marker("slow")]
        config.hook.pytest_deselected(items=slow)
        config._slow_deselected = len(slow)
        if hasattr(config, "workeroutput"):  # a process of several: the one that reports reads it
            config.workeroutput["slow_deselected"] = len(slow)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """Each process collected the whole suite: any of them knows how many slow tests it left out."""
    count = getattr(node, "workeroutput", {}).get("slow_deselected", 0)
    node.config._slow_deselected = max(getattr(node.config, "_slow_deselected", 0), count)


def _slow_files_first(items) -> None:
    """Files whose tests are all slow first, then those holding some, each in collection order: the
    processes of a run (scripts/test) take one file at a time, and a file of one long test (the
    schemathesis run, some 25 minutes) taken last would end the run alone."""
    files: dict[str, list[bool]] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item.get_closest_marker("slow") is not None)
    rank = {path: (0 if all(slow) else 1 if any(slow) else 2) for path, slow in files.items()}
    items.sort(key=lambda item: rank[item.nodeid.split("::")[0]])  # stable: the files keep their order


# --- what a run did not test -----------------------------------------------------------------

def _skip_reason(report: pytest.TestReport) -> str:
    # A skip's longrepr is (path, line, "Skipped: <reason>").
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    return reason.removeprefix("Skipped: ")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """With REQUIRE_ALL_TESTS=1 any skip fails, not only those that go through skip_or_fail."""
    report = yield
    if STRICT and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"{_skip_reason(report)} (REQUIRE_ALL_TESTS=1 turns this skip into a failure)"
    return report


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter):
    """Ends the report with what was skipped, grouped by reason with counts, so that a run on a
    machine without PostgreSQL or Chromium is not taken for a full pass. The outermost wrapper,
    so these are the last lines before the counts."""
    result = yield
    slow = getattr(terminalreporter.config, "_slow_deselected", 0)
    if slow:
        terminalreporter.line(f"{slow} tests marked slow were deselected: scripts/test --run-slow runs them too")
    reasons = Counter(_skip_reason(report) for report in terminalreporter.stats.get("skipped", []))
    if reasons:
        total = sum(reasons.values())
        terminalreporter.section(f"{total} skipped: not run, so not passed", sep="=", yellow=True, bold=True)
        terminalreporter.line("tests  reason")
        for reason, count in reasons.most_common():
            terminalreporter.line(f"{count:>5}  {reason}")
        terminalreporter.line("Each reason says what its tests need; provide it and run again "
                              "(REQUIRE_ALL_TESTS=1 makes any skip a failure, as .ci/run does).")
    return result


# --- databases -------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def postgres_server_url():
    if not PG_URL:
        skip_or_fail("PostgreSQL tests need TEST_DATABASE_URL=postgresql://user@host:port/db")
    return PG_URL


def _pg_admin(url: str):
    import psycopg2
    parts = urlparse(url)
    conn = psycopg2.connect(dbname=parts.path.lstrip("/") or "postgres", user=parts.username,
                            password=parts.password, host=parts.hostname, port=parts.port or 5432)
    conn.autocommit = True
    return conn


@pytest.fixture(scope="session")
def scratch_postgres(postgres_server_url):
    """Makes scratch databases on the test server and drops them at the end of the run."""
    made = []

    def make() -> str:
        name = f"scratch_{uuid.uuid4().hex[:12]}"
        conn = _pg_admin(postgres_server_url)
        with conn.cursor() as cur:
            cur.execute(f'CREATE DATABASE "{name}"')
        conn.close()
        made.append(name)
        return urlunparse(urlparse(postgres_server_url)._replace(path="/" + name))

    yield make
    conn = _pg_admin(postgres_server_url)
    with conn.cursor() as cur:
        for name in made:
            cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    conn.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request, tmp_path):
    """A fresh, empty database of each kind: SQLite in tmp_path, a scratch PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'service.sqlite3'}"
    return request.getfixturevalue("scratch_postgres")()


@pytest.fixture(scope="session")
def _shared_postgres(scratch_postgres) -> str:
    return scratch_postgres()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def app_database_url(request, tmp_path):
    """The database of the app under test, with no rows: SQLite in tmp_path; on PostgreSQL one
    database for the session, migrated by the first app and emptied before each test (creating,
    migrating and dropping a scratch database costs about 0.2 s a test, TRUNCATE of every table
    0.13 s, deleting the few rows a test leaves and restarting the sequences a few milliseconds)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'service.sqlite3'}"
    import psycopg2.errors
    url = request.getfixturevalue("_shared_postgres")
    conn = _pg_admin(url)
    try:
        with conn.cursor() as cur:
            # A connection an earlier test left in a transaction would make this wait for ever.
            cur.execute("SET lock_timeout = '5s'")
            _empty_postgres(cur)
    except psycopg2.errors.LockNotAvailable:
        return request.getfixturevalue("scratch_postgres")()
    finally:
        conn.close()
    return url


def _empty_postgres(cur) -> None:
    """Every row of every table but the migrations' record deleted, referencing tables before
    the tables they reference, and every sequence restarted, in one transaction."""
    cur.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'schema_version'")
    tables = {name for (name,) in cur.fetchall()}
    cur.execute("SELECT conrelid::regclass::text, confrelid::regclass::text FROM pg_constraint "
                "WHERE contype = 'f' AND connamespace = 'public'::regnamespace")
    references = {}
    for child, parent in cur.fetchall():
        references.setdefault(parent.strip('"'), set()).add(child.strip('"'))
    ordered, placed = [], set()

    def place(table: str) -> None:  # those that reference it first
        if table in placed:
            return
        placed.add(table)
        for child in sorted(references.get(table, ())):
            if child != table:
                place(child)
        ordered.append(table)

    for table in sorted(tables):
        place(table)
    cur.execute("SELECT sequencename FROM pg_sequences WHERE schemaname = 'public'")
    sequences = [name for (name,) in cur.fetchall()]
    cur.execute("BEGIN; " + "".join(f'DELETE FROM "{t}"; ' for t in ordered if t in tables)
                + "".join(f"SELECT setval('\"{s}\"', 1, false); " for s in sequences) + "COMMIT")


# --- the app ---------------------------------------------------------------------------------

class ContractCheckedClient(TestClient):
    """The test client, every answer checked against the contract (tests/support/contract_check.py).
    ``unchecked`` is the same client without the check, for a test that sends what no client of
    the contract would and asserts the answer itself."""

    checking = True

    def request(self, method, url, *args, **kwargs):
        response = super().request(method, url, *args, **kwargs)
        if self.checking and method.upper() != "HEAD":
            from tests.support.contract_check import check
            check(method, response.request.url.path, response.status_code,
                  response.headers.get("content-type", ""), response.content)
        return response

    @property
    def unchecked(self) -> TestClient:
        clone = _Unchecked.__new__(_Unchecked)
        clone.__dict__ = self.__dict__
        return clone


class _Unchecked(ContractCheckedClient):
    checking = False


class Platform:
    """The app under test, its client (every answer checked against the contract), and the
    factories bound to its database."""

    def __init__(self, client: TestClient):
        self.client = client

    def workspace(self, name: str = "acme") -> Actor:
        return factories.workspace(name)

    def member(self, owner: Actor, role: str) -> Actor:
        return factories.member(owner, role)

    def create_key(self, actor: Actor, expect: int = 200, **body) -> dict:
        """POST /api-keys as ``actor``: the way to a key when the test is about the API."""
        body.setdefault("name", "test key")
        body.setdefault("userId", actor.user_id)
        response = self.client.post("/api/v2/api-keys", params={"workspaceId": actor.workspace_id},
                                    headers=actor.headers, json=body)
        assert response.status_code == expect, response.text
        return response.json()["data"]["result"]

    def key_actor(self, actor: Actor, **body) -> Actor:
        return actor.with_secret(self.create_key(actor, **body)["key"])

    def client_at(self, address: str) -> TestClient:
        """A client of the same app whose requests come from ``address`` (the ASGI scope's client,
        as uvicorn fills it); ``client`` itself calls from ``testclient``, which is no address."""
        return ContractCheckedClient(self.client.app, raise_server_exceptions=False, client=(address, 50000))


@pytest.fixture(scope="session")
def converted_model(tmp_path_factory) -> Path:
    """The bundled speech model, converted once per test run (the speech tests, transcription)."""
    from stt.models import available_models, prepare
    data_dir = tmp_path_factory.mktemp("models")
    return prepare(available_models(data_dir)["svc-stt"])


def make_settings(database_url: str, tmp_path, **overrides):
    """Settings for an app in a test: no transcription or webhook threads unless the test asks for them."""
    from core.settings import Settings
    return Settings(database_url=database_url, data_dir=str(tmp_path),
                    **{"transcription_workers": 0, "webhook_workers": 0, "retention_interval_s": 0,
                       "optimization_workers": 0, "simulation_workers": 0, "export_workers": 0,
                       "sync_workers": 0, **overrides})


@pytest.fixture
def settings_overrides():
    return {}


@pytest.fixture
def platform(app_database_url, tmp_path, settings_overrides):
    from api.app import create_app
    app = create_app(make_settings(app_database_url, tmp_path, **settings_overrides))
    with ContractCheckedClient(app, raise_server_exceptions=False) as client:
        yield Platform(client)
    from models.kernel.db import database
    database.close()
    if hasattr(database.obj, "close_all"):
        database.close_all()


@pytest.fixture
def llm():
    """A local server that answers like an OpenAI-compatible chat-completions endpoint, scripted by
    the test (tests/support/chat_completions_server.py): what stands in for a remote language model."""
    with ChatCompletionsServer() as server:
        yield server


# --- a real server process -------------------------------------------------------------------


def _generic_answer(body: dict):
    """What the local endpoint answers each side of a conversation: the agent a sentence, a
    simulated caller a turn that hangs up, a judge a pass, structured data nothing."""
    side = Sides.side_of(body)
    return {"agent": "Hello, how can I help?", "caller": {"message": "That is all, thanks.", "endCall": True},
            "judge": {"passed": True, "reason": "Fine."}, "extract": {}}[side]


@pytest.fixture
def conversing_server(tmp_path):
    """The live server (rate limits off, on SQLite) with a local chat-completions endpoint, as a
    deployment has its own: simulations hold their conversations and chat sessions get replies."""
    with ChatCompletionsServer() as llm:
        llm.respond(_generic_answer)
        server = start_server(tmp_path, RATE_LIMITS_ENABLED="false", LLM_BASE_URL=llm.base_url,
                              LLM_API_KEY="sk-schemathesis", SIMULATION_WORKERS="1")
        yield server
        stop_server(server)


@pytest.fixture
def live_server(tmp_path):
    """The management API as users run it (scripts/serve's entry point), rate limits off, on SQLite."""
    server = start_server(tmp_path, RATE_LIMITS_ENABLED="false")
    yield server
    stop_server(server)
