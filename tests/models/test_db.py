"""Connections: SQLite keeps a thread's connection; the PostgreSQL pool pings only idle connections,
waits for a busy one up to its timeout, and a database that cannot serve is Unavailable (503)."""
from __future__ import annotations

import socket
import threading
import time

import pytest
from playhouse.pool import PooledPostgresqlDatabase

from models.kernel.db import _Pool, database, open_database, session, utcnow
from models.kernel.errors import Unavailable


def test_a_sqlite_session_keeps_the_threads_connection(tmp_path):
    open_database(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    with session():
        first = database.connection()
    with session():
        assert database.connection() is first
    seen = []
    thread = threading.Thread(target=lambda: seen.append(session().__enter__().connection()))
    thread.start()
    thread.join()
    assert seen[0] is not first  # one per thread: sqlite3 connections are not shared
    database.close()


def test_a_sqlite_transaction_that_reads_then_writes_waits_out_another_process(tmp_path):
    """Another process (here a connection of its own) commits between a transaction's first read
    and its first write: the transaction must wait for the lock, not fail ("database is locked",
    answered 503), as a deferred BEGIN would once its snapshot is stale."""
    import sqlite3
    path = tmp_path / "db.sqlite3"
    open_database(f"sqlite:///{path}")
    with session():
        database.execute_sql("CREATE TABLE t (n INTEGER)")
    other = sqlite3.connect(path, timeout=10, check_same_thread=False)
    other.execute("PRAGMA journal_mode=wal")
    wrote = threading.Event()

    def write_elsewhere():
        other.execute("INSERT INTO t VALUES (2)")
        other.commit()
        wrote.set()

    with session():
        with database.atomic():
            database.execute_sql("SELECT count(*) FROM t").fetchone()
            elsewhere = threading.Thread(target=write_elsewhere)
            elsewhere.start()
            wrote.wait(0.5)  # held back by this transaction's lock, or done: either way, write now
            database.execute_sql("INSERT INTO t VALUES (1)")
        elsewhere.join(15)
        assert wrote.is_set()
        assert sorted(n for (n,) in database.execute_sql("SELECT n FROM t").fetchall()) == [1, 2]
    other.close()
    database.close()


@pytest.fixture
def pg(postgres_server_url, scratch_postgres, monkeypatch):
    open_database(scratch_postgres(), pool_size=2)
    pings = []
    original = PooledPostgresqlDatabase._is_closed
    monkeypatch.setattr(PooledPostgresqlDatabase, "_is_closed",
                        lambda self, conn: pings.append(conn) or original(self, conn))
    yield pings
    database.close_all()


@pytest.mark.postgres
def test_a_connection_checked_in_a_moment_ago_is_handed_out_without_a_ping(pg):
    with session():
        database.execute_sql("SELECT 1")
    with session():
        database.execute_sql("SELECT 1")
    assert pg == []


@pytest.mark.postgres
def test_an_idle_connection_is_pinged_and_a_dead_one_replaced(pg, monkeypatch):
    monkeypatch.setattr(_Pool, "PING_AFTER_IDLE_S", 0.0)
    with session():
        pid = database.execute_sql("SELECT pg_backend_pid()").fetchone()[0]
    # Another connection ends that one, as a server restart or an idle timeout would.
    import psycopg2
    killer = psycopg2.connect(_dsn())
    killer.autocommit = True
    killer.cursor().execute("SELECT pg_terminate_backend(%s)", (pid,))
    killer.close()
    with session():
        assert database.execute_sql("SELECT pg_backend_pid()").fetchone()[0] != pid
    assert len(pg) >= 1


def _dsn() -> str:
    params = database.obj.connect_params
    return (f"dbname={database.obj.database} user={params.get('user') or ''} host={params['host']} "
            f"port={params['port']}")


# --- the pool's wait, and a database that cannot serve -----------------------------------------

def hold_the_only_connection(seconds: float) -> threading.Thread:
    """Another thread checks the pool's one connection out for ``seconds``; returns once it has it."""
    taken = threading.Event()

    def hold():
        with session():
            database.execute_sql("SELECT 1")
            taken.set()
            time.sleep(seconds)

    thread = threading.Thread(target=hold)
    thread.start()
    assert taken.wait(10)
    return thread


@pytest.fixture
def one_connection(postgres_server_url, scratch_postgres):
    url = scratch_postgres()

    def open_pool(timeout: float):
        open_database(url, pool_size=1, pool_timeout=timeout)

    yield open_pool
    database.close_all()


@pytest.mark.postgres
def test_a_session_waits_for_a_busy_pool_within_the_timeout(one_connection):
    one_connection(timeout=5.0)
    holder = hold_the_only_connection(0.3)
    started = time.monotonic()
    with session():
        assert database.execute_sql("SELECT 1").fetchone() == (1,)
    assert 0.2 < time.monotonic() - started < 4
    holder.join()


@pytest.mark.postgres
@pytest.mark.parametrize("timeout, at_most", [(0.3, 2.0), (0, 0.5)])
def test_past_the_pool_timeout_a_session_is_unavailable_with_retry_after(one_connection, timeout, at_most):
    one_connection(timeout=timeout)
    holder = hold_the_only_connection(at_most + 1)
    started = time.monotonic()
    with pytest.raises(Unavailable) as refused, session():
        pass
    waited = time.monotonic() - started
    assert timeout * 0.9 <= waited < at_most
    assert refused.value.status == 503 and int(refused.value.headers["Retry-After"]) > 0
    assert "busy" in refused.value.message
    holder.join()


def test_an_unreachable_database_is_unavailable_and_its_address_not_told(tmp_path):
    open_database(f"postgresql://postgres@127.0.0.1:{closed_port()}/nowhere", pool_size=2, pool_timeout=1)
    try:
        with pytest.raises(Unavailable) as refused, session():
            database.execute_sql("SELECT 1")
        assert refused.value.status == 503 and refused.value.headers["Retry-After"].isdigit()
        assert "127.0.0.1" not in refused.value.message and "unavailable" in refused.value.message
        assert "refused" in str(refused.value.__cause__).lower()  # what the operator's log shows
    finally:
        database.close_all()


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_what_is_deferred_to_the_commit_runs_after_it_and_not_at_all_on_a_rollback(db):
    from models.kernel.db import after_commit, unit_of_work
    from models.kernel.scoping import Workspace
    done = []
    after_commit(lambda: done.append("outside"))  # no unit of work: at once
    assert done == ["outside"]
    with session(), unit_of_work():
        Workspace.create(name="kept", settings={}, created_at=utcnow())
        after_commit(lambda: done.append("committed"))
        with unit_of_work():  # nested: the outer one commits
            after_commit(lambda: done.append("nested"))
        assert done == ["outside"]
    assert done == ["outside", "committed", "nested"]
    with pytest.raises(RuntimeError), session(), unit_of_work():
        Workspace.create(name="dropped", settings={}, created_at=utcnow())
        after_commit(lambda: done.append("rolled back"))
        raise RuntimeError("the change failed")
    assert done == ["outside", "committed", "nested"]
    with session():
        assert sorted(w.name for w in Workspace.select()) == ["kept"]
