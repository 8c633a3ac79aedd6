"""The database handle, its connection settings, and the column types shared by every model.

Peewee keeps one connection per thread; the web layer opens and closes it per request inside
the thread that runs the handler (see ``connection``).
"""
from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

from peewee import Database, DatabaseProxy, Model, SqliteDatabase, TextField
from playhouse.pool import PooledPostgresqlDatabase

database = DatabaseProxy()

SQLITE_PRAGMAS = {
    "journal_mode": "wal",
    # Several worker processes share one SQLite file: wait for the write lock instead of failing.
    "busy_timeout": 10_000,
    "foreign_keys": 1,
    "synchronous": "normal",
}


def open_database(url: str | None, data_dir: str | os.PathLike = "data", pool_size: int = 20) -> Database:
    """Bind the models to SQLite under ``data_dir`` or to PostgreSQL when ``url`` says so."""
    if url and url.startswith(("postgres://", "postgresql://")):
        db = _postgres(url, pool_size)
    elif url and url.startswith("sqlite:///"):
        db = _sqlite(Path(url[len("sqlite:///"):]))
    elif url:
        raise ValueError("DATABASE_URL must start with postgresql:// or sqlite:///")
    else:
        db = _sqlite(Path(data_dir) / "service.sqlite3")
    database.initialize(db)
    return db


def _sqlite(path: Path) -> SqliteDatabase:
    path.parent.mkdir(parents=True, exist_ok=True)
    return SqliteDatabase(str(path), pragmas=SQLITE_PRAGMAS, check_same_thread=False)


def _postgres(url: str, pool_size: int) -> PooledPostgresqlDatabase:
    parts = urlparse(url)
    options = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    return PooledPostgresqlDatabase(
        unquote(parts.path.lstrip("/")) or "postgres",
        user=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 5432,
        max_connections=pool_size,
        stale_timeout=300,
        **options,
    )


def is_postgres() -> bool:
    return isinstance(database.obj, PooledPostgresqlDatabase)


def utcnow() -> datetime:
    """Naive UTC: the one representation stored in every timestamp column, on either database."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


def isoformat(value: datetime | None) -> str | None:
    return None if value is None else value.replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"


class JSONField(TextField):
    """JSON kept as text, so that both databases store it the same way."""

    def db_value(self, value):
        return None if value is None else json.dumps(value, separators=(",", ":"))

    def python_value(self, value):
        return None if value is None else json.loads(value)


class BaseModel(Model):
    class Meta:
        database = database
        legacy_table_names = False
