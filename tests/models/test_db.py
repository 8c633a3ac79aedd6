"""Connections: SQLite keeps a thread's connection; the PostgreSQL pool pings only idle connections."""
from __future__ import annotations

import threading

import pytest
from playhouse.pool import PooledPostgresqlDatabase

from models.db import _Pool, database, open_database, session


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
