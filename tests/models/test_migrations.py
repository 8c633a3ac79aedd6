"""Schema migrations: a fresh database, upgrades that keep an earlier release's data, idempotence,
and a schema that matches the models, columns, indexes and foreign keys alike."""
from __future__ import annotations

import importlib
import pkgutil
from datetime import datetime, timedelta

import pytest
from starlette.testclient import TestClient

import models
from models.configs.tables import VersionedEntity
from models.kernel.db import BaseModel, database, open_database
from models.kernel.scoping import WorkspaceScoped
from models.kernel.secrets import digest
from models.knowledge import search
from models.migrations import LATEST, MIGRATIONS, current_version, migrate


def _all_models() -> list[type[BaseModel]]:
    """Every concrete model of the models package, found by importing its modules."""
    for info in pkgutil.walk_packages(models.__path__, "models."):
        importlib.import_module(info.name)
    found, stack = [], list(BaseModel.__subclasses__())
    while stack:
        model = stack.pop()
        stack.extend(model.__subclasses__())
        if model.__module__.startswith("models.") and model not in (WorkspaceScoped, VersionedEntity):  # bases have no table
            found.append(model)
    return sorted(found, key=lambda m: m.__name__)


MODELS = _all_models()


@pytest.fixture
def db(database_url, tmp_path):
    open_database(database_url, tmp_path)
    database.connect()
    yield database_url
    # The upgrade test rebinds the database through the app; close whichever is bound now.
    if not database.is_closed():
        database.close()
    if hasattr(database.obj, "close_all"):
        database.close_all()


def test_migrations_are_numbered_in_order_and_named():
    assert [m.number for m in MIGRATIONS] == list(range(1, LATEST + 1))
    assert all(m.name for m in MIGRATIONS)


def test_a_fresh_database_gets_every_migration(db):
    assert migrate() == list(range(1, LATEST + 1))
    assert current_version() == LATEST
    assert migrate() == []


def test_every_model_has_a_table_and_every_table_a_model(db):
    migrate()
    # The search index's tables (an FTS5 table and its shadow tables on SQLite) have no model.
    tables = {t for t in database.get_tables() if not t.startswith(search.INDEX_TABLES)}
    tables -= {"schema_version", "sqlite_sequence"}
    assert tables == {m._meta.table_name for m in MODELS}


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_the_migrated_schema_matches_the_model(db, model):
    migrate()
    table = model._meta.table_name
    # The search index's stored vector on PostgreSQL has no field either.
    columns = {c.name: c for c in database.get_columns(table) if c.name not in search.INDEX_COLUMNS}
    fields = {f.column_name: f for f in model._meta.sorted_fields}
    assert set(columns) == set(fields)
    for name, field in fields.items():
        assert columns[name].null == field.null, name
    # Indexes: the ones the model declares (unique fields, foreign keys, Meta.indexes), by columns.
    declared = {(tuple(f.column_name for f in index._expressions), index._unique)
                for index in model._meta.fields_to_index()}
    actual = {(tuple(index.columns), index.unique) for index in database.get_indexes(table)
              if not index.name.startswith("sqlite_autoindex") and not index.name.endswith("_pkey")
              and index.name not in search.INDEX_NAMES}
    # SQLite names the index of a UNIQUE column constraint sqlite_autoindex_*; compare those by columns.
    actual |= {((f.column_name,), True) for f in fields.values() if f.unique and not f.primary_key
               and ((f.column_name,), True) not in actual and _has_unique_constraint(table, f.column_name)}
    assert actual == declared
    declared_fks = {(f.column_name, f.rel_model._meta.table_name, f.rel_field.column_name)
                    for f in model._meta.refs}
    actual_fks = {(fk.column, fk.dest_table, fk.dest_column) for fk in database.get_foreign_keys(table)}
    assert actual_fks == declared_fks


def _has_unique_constraint(table: str, column: str) -> bool:
    return any(index.unique and index.columns == [column] for index in database.get_indexes(table))


def _insert(rows) -> None:
    p = database.param
    with database.atomic():
        for sql, params in rows:
            database.execute_sql(sql.format(p=p), params)


# Ids as the service made them then (UUIDs), but for the keys' and the token's, which no request names.
W1, U1 = "4f1d2c3b-5a6e-4f70-8a9b-0c1d2e3f4a5b", "7d5b1c8e-3f57-4c59-9d37-2f4f8a3e6a10"
_RELEASE_2 = [
    ("INSERT INTO workspace (id, name, created_at) VALUES ({p}, {p}, {p})", (W1, "old", datetime(2026, 11, 1))),
    ('INSERT INTO "user" (id, email, display_name, is_active, created_at) VALUES ({p}, {p}, {p}, {p}, {p})',
     (U1, "old@example.com", "Old", True, datetime(2026, 11, 1))),
    ("INSERT INTO membership (workspace_id, user_id, role, created_at) VALUES ({p}, {p}, {p}, {p})",
     (W1, U1, "owner", datetime(2026, 11, 1))),
    ("INSERT INTO access_token (id, user_id, token_hash, created_at) VALUES ({p}, {p}, {p}, {p})",
     ("t1", U1, digest("vat_old-token"), datetime(2026, 11, 1))),
    ("INSERT INTO api_key (id, workspace_id, user_id, name, key_hash, is_active, created_at, expires_at, permissions) "
     "VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p})",
     ("k1", W1, U1, "old key", digest("vak_old-key"), True, datetime(2026, 11, 1),
      datetime.utcnow() + timedelta(days=30), '["api-keys:read"]')),
    ("INSERT INTO api_key (id, workspace_id, user_id, name, key_hash, is_active, created_at, expires_at, permissions) "
     "VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p})",
     ("k2", W1, U1, "empty key", digest("vak_empty-key"), True, datetime(2026, 11, 1),
      datetime.utcnow() + timedelta(days=30), '[]')),
]


def test_an_upgrade_keeps_an_earlier_releases_data(db, tmp_path, database_url):
    """A database as release 2 left it (API keys without rate limits) works after the upgrade."""
    migrate(target=2)
    assert current_version() == 2
    _insert(_RELEASE_2)
    database.close()

    from api.app import create_app
    from core.settings import Settings
    from models.identity.tables import ApiKey
    app = create_app(Settings(database_url=database_url, data_dir=str(tmp_path)))
    with database.connection_context():
        assert current_version() == LATEST
        key = ApiKey.get_by_id("k1")
        # Keys that could transcribe before speech:transcribe existed still can; an empty one stays empty.
        assert (key.name, key.permissions, key.requests_per_minute) == ("old key", ("api-keys:read", "speech:transcribe"), None)
        assert ApiKey.get_by_id("k2").permissions == ()
    with TestClient(app) as client:
        params = {"workspaceId": W1}
        listed = client.get("/api/v2/api-keys", params=params, headers={"Authorization": "Bearer vak_old-key"})
        assert listed.status_code == 200, listed.text
        assert {k["id"] for k in listed.json()["data"]["result"]["apiKeys"]} == {"k1", "k2"}
        created = client.post("/api/v2/api-keys", params=params, headers={"Authorization": "Bearer vat_old-token"},
                              json={"name": "new", "userId": U1, "rateLimit": {"requestsPerMinute": 5, "requestsPerDay": 50}})
        assert created.status_code == 200, created.text


def test_the_upgrade_to_one_usage_row_keeps_each_credentials_latest_counts(db):
    """Release 3 counted a row per window; the upgrade keeps the latest minute and day of each."""
    migrate(target=3)
    rows = [("k", "m", 100, 7), ("k", "m", 101, 3), ("k", "d", 1, 40), ("k", "d", 0, 99), ("j", "d", 1, 5)]
    _insert([("INSERT INTO rate_limit_counter (credential_id, window_kind, window_start, hits) "
              "VALUES ({p}, {p}, {p}, {p})", row) for row in rows])
    migrate()
    usage = database.execute_sql(
        "SELECT credential_id, minute, minute_hits, day, day_hits FROM rate_limit_usage ORDER BY credential_id").fetchall()
    assert [tuple(r) for r in usage] == [("j", 0, 0, 1, 5), ("k", 101, 3, 1, 40)]
    assert "rate_limit_counter" not in database.get_tables()


def test_the_upgrade_to_the_tally_of_runs_counts_the_runs_there_were(db):
    """Release 16 counted runs on every list; the upgrade fills the tally from the runs it finds."""
    migrate(target=16)
    at = datetime(2026, 11, 1)
    rows = [("INSERT INTO workspace (id, name, created_at) VALUES ({p}, {p}, {p})", (ws, ws, at)) for ws in ("w1", "w2")]
    statuses = {"w1": ["generating", "pendingReview", "pendingReview", "completed", "failed", "failed", "failed"],
                "w2": ["completed"]}
    rows += [("INSERT INTO optimization_run (id, workspace_id, agent_id, status, optimizer, feedback_count, "
              "solution_count, accepted_count, rejected_count, attempts, created_by, created_at, updated_at) "
              "VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p})",
              (f"{ws}-run-{i}", ws, "agent", status, "builtin", 1, 0, 0, 0, 0, "user", at, at))
             for ws, each in statuses.items() for i, status in enumerate(each)]
    _insert(rows)
    migrate()
    tally = database.execute_sql(
        "SELECT workspace_id, status, runs FROM optimization_run_tally ORDER BY workspace_id, status").fetchall()
    counted = database.execute_sql("SELECT workspace_id, status, COUNT(*) FROM optimization_run "
                                   "GROUP BY workspace_id, status ORDER BY workspace_id, status").fetchall()
    assert [tuple(r) for r in tally] == [tuple(r) for r in counted] == [
        ("w1", "completed", 1), ("w1", "failed", 3), ("w1", "generating", 1), ("w1", "pendingReview", 2),
        ("w2", "completed", 1)]
