"""The database handle, its connection settings, and the column types shared by every model.

Connections: Peewee keeps one connection per thread, and every unit of work (a request's
admission, a handler, a CLI command) runs inside ``session()``. On SQLite a thread's connection
stays open for the thread's life: opening one costs a file open and four PRAGMAs, more than the
queries of a typical request. On PostgreSQL ``session()`` checks a connection out of the
process's pool and back in; the pool skips its liveness round trip for a connection that was in
use moments ago (see ``_Pool``), so a check-out costs no SQL.

A request waits up to ``pool_timeout`` seconds for a pooled connection. When the database cannot
serve (no connection came free in time, the server is down or went away mid-request) ``session()``
raises the domain's ``Unavailable``, which both servers answer with 503 and ``Retry-After``: the
request may succeed later, and no driver message reaches the client. An API process runs its
handlers on the event loop, one at a time, and a few in worker threads (core.settings
``handler_threads``), together never more than the pool has connections, so its own requests never
wait for the pool; the wait covers everything else that shares the process.
"""
from __future__ import annotations

import functools
import os
import threading
import time
import uuid
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

import orjson
from peewee import Database, DatabaseProxy, InterfaceError, Model, OperationalError, SqliteDatabase, TextField
from playhouse.pool import MaxConnectionsExceeded, PooledPostgresqlDatabase

from models.kernel.errors import Unavailable

database = DatabaseProxy()

SQLITE_PRAGMAS = {
    "journal_mode": "wal",
    # Several worker processes share one SQLite file: wait for the write lock instead of failing.
    "busy_timeout": 10_000,
    "foreign_keys": 1,
    "synchronous": "normal",
}


# How long a client is asked to wait before retrying a request the database could not serve.
RETRY_AFTER_S = 5


def open_database(url: str | None, data_dir: str | os.PathLike = "data", pool_size: int = 20,
                  pool_timeout: float = 10.0) -> Database:
    """Bind the models to SQLite under ``data_dir`` or to PostgreSQL when ``url`` says so; on
    PostgreSQL a session waits up to ``pool_timeout`` seconds (0: not at all) for a connection."""
    if is_postgres_url(url):
        db = _postgres(url, pool_size, pool_timeout)
    elif url and url.startswith("sqlite:///"):
        db = _sqlite(Path(url[len("sqlite:///"):]))
    elif url:
        raise ValueError("DATABASE_URL must start with postgresql:// or sqlite:///")
    else:
        db = _sqlite(Path(data_dir) / "service.sqlite3")
    database.initialize(db)
    return db


def is_postgres_url(url: str | None) -> bool:
    return bool(url) and url.startswith(("postgres://", "postgresql://"))


def _sqlite(path: Path) -> SqliteDatabase:
    path.parent.mkdir(parents=True, exist_ok=True)
    return _Sqlite(str(path), pragmas=SQLITE_PRAGMAS, check_same_thread=False)


class _Sqlite(SqliteDatabase):
    """SQLite with one writer at a time per process.

    SQLite lets one connection write at a time and makes the others wait in its busy handler,
    which sleeps 1, 2, 5, 10... up to 100 ms between tries: with 16 requests at once, each writing
    its rate-limit count, some waited most of a second. Inside a process writers now queue on a
    lock and go the moment it is free (a write outside a transaction, or a whole transaction);
    across processes SQLite's busy handler still decides, between far fewer contenders, and a
    transaction takes the write lock when it begins (see ``begin``).
    """

    def __init__(self, *args, **kwargs):
        self._writer = threading.Lock()
        self._holding = threading.local()
        super().__init__(*args, **kwargs)

    def execute_sql(self, sql, params=None):
        if self.in_transaction() or sql.lstrip()[:6].upper() == "SELECT":
            return super().execute_sql(sql, params)
        with self._writer:
            # Fetched under the lock: an autocommit write commits only once its rows are read.
            return _Fetched(super().execute_sql(sql, params))

    def begin(self, lock_type=None):
        self._writer.acquire()
        self._holding.value = True
        try:
            # IMMEDIATE: the write lock at BEGIN, waited for in the busy handler. A deferred BEGIN
            # reads from a snapshot, and a write after another process committed fails at once
            # ("database is locked", no wait), which several workers on one file made happen.
            super().begin(lock_type or "IMMEDIATE")
        except BaseException:
            self._release()
            raise

    def commit(self):
        try:
            super().commit()
        finally:
            self._release()

    def rollback(self):
        try:
            super().rollback()
        finally:
            self._release()

    def _release(self) -> None:
        # Peewee may roll back after a failed commit: release once.
        if getattr(self._holding, "value", False):
            self._holding.value = False
            self._writer.release()


class _Fetched:
    """A cursor whose rows were all read: what a write statement hands back from under the lock."""

    def __init__(self, cursor) -> None:
        self._rows = cursor.fetchall() if cursor.description else []
        self._at = 0
        self.description, self.rowcount, self.lastrowid = cursor.description, cursor.rowcount, cursor.lastrowid

    def fetchone(self):
        if self._at >= len(self._rows):
            return None
        self._at += 1
        return self._rows[self._at - 1]

    def fetchall(self):
        rows, self._at = self._rows[self._at:], len(self._rows)
        return rows

    def fetchmany(self, size=1):
        rows = self._rows[self._at:self._at + size]
        self._at += len(rows)
        return rows

    def __iter__(self):
        return iter(self.fetchall())

    def close(self) -> None:
        pass


class _Pool(PooledPostgresqlDatabase):
    """Peewee's pool, which pings (``SELECT 1``) every connection it hands out; this one pings only
    a connection that sat idle for longer than ``PING_AFTER_IDLE_S``, since one checked in a moment
    ago by a request that used it is known to be alive."""

    PING_AFTER_IDLE_S = 5.0

    def __init__(self, *args, **kwargs):
        self._checked_in: dict[int, float] = {}
        super().__init__(*args, **kwargs)

    def _is_closed(self, conn) -> bool:
        idle_since = self._checked_in.pop(id(conn), None)
        if conn.closed:
            return True
        if (idle_since is not None and time.monotonic() - idle_since < self.PING_AFTER_IDLE_S
                and self._adapter.txn_status(conn) == self._adapter.txn_idle):
            return False
        return super()._is_closed(conn)

    def _close(self, conn, close_conn=False):
        self._checked_in[id(conn)] = time.monotonic()
        super()._close(conn, close_conn)

    def _close_raw(self, conn):
        # Closed for good (stale, unusable, or on request): forget it, or the record would outlive it.
        self._checked_in.pop(id(conn), None)
        super()._close_raw(conn)


def _postgres(url: str, pool_size: int, pool_timeout: float) -> PooledPostgresqlDatabase:
    parts = urlparse(url)
    options = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    return _Pool(
        unquote(parts.path.lstrip("/")) or "postgres",
        user=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 5432,
        max_connections=pool_size,
        stale_timeout=300,
        # Peewee's pool reads a timeout of 0 as "wait for ever" and None as "do not wait".
        timeout=pool_timeout if pool_timeout > 0 else None,
        **options,
    )


# What the drivers raise when the database, rather than the statement, failed: refused or lost
# connections, SQLite's lock wait running out, the pool's wait running out.
_UNAVAILABLE = (OperationalError, InterfaceError, MaxConnectionsExceeded)


@contextmanager
def session():
    """A connection for one unit of work in this thread (see the module's docstring). Raises
    Unavailable when the database cannot serve."""
    try:
        opened = database.connect(reuse_if_open=True)
    except _UNAVAILABLE as exc:
        raise _unavailable(exc) from exc
    try:
        yield database
    except _UNAVAILABLE as exc:
        raise _unavailable(exc) from exc
    finally:
        if opened and is_postgres():
            database.close()


_units = threading.local()


@contextmanager
def unit_of_work():
    """One transaction around everything a request changes, its nested ``atomic()`` blocks
    becoming savepoints; what ``after_commit`` deferred runs once it has committed, and is
    dropped if it rolls back."""
    if getattr(_units, "pending", None) is not None:  # already inside one: the outer one commits
        yield
        return
    _units.pending = []
    try:
        with database.atomic():
            yield
        pending = _units.pending
    finally:
        _units.pending = None
    for action in pending:
        action()


def after_commit(action) -> None:
    """``action()`` once what the thread is changing has committed: at once outside a unit of work
    (a domain function's own ``atomic()`` has ended by the time it calls this), else when the unit
    commits. For what cannot be rolled back, such as deleting a file a row pointed at."""
    pending = getattr(_units, "pending", None)
    if pending is None:
        action()
    else:
        pending.append(action)


def _unavailable(exc: Exception) -> Unavailable:
    if isinstance(exc, MaxConnectionsExceeded):
        message = "The server is too busy to serve this request"
    else:
        message = "The database is unavailable"
    return Unavailable(f"{message}; retry in {RETRY_AFTER_S} s.", retry_after_s=RETRY_AFTER_S)


def is_postgres() -> bool:
    return isinstance(database.obj, PooledPostgresqlDatabase)


def utcnow() -> datetime:
    """Naive UTC: the one representation stored in every timestamp column, on either database."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


class JSONField(TextField):
    """JSON kept as text, so that both databases store it the same way. orjson decodes a key's
    150 permissions in a fifth of the time json does, and pages decode one such list per row."""

    def db_value(self, value):
        return None if value is None else orjson.dumps(value).decode()

    def python_value(self, value):
        return None if value is None else orjson.loads(value)


class BaseModel(Model):
    class Meta:
        database = database
        legacy_table_names = False


class FrozenListField(JSONField):
    """A JSON list read back as a tuple. Lists such as a key's frozen permissions repeat from row to
    row, so each distinct text is decoded once (and, being a tuple, can be shared safely)."""

    def python_value(self, value):
        return None if value is None else _frozen_list(value)


@functools.lru_cache(maxsize=1024)
def _frozen_list(text: str) -> tuple:
    return tuple(orjson.loads(text))


def new_id() -> str:
    return str(uuid.uuid4())
