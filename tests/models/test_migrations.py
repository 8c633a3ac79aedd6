"""Schema migrations: a fresh database, an upgrade that keeps an earlier release's data, idempotence."""
from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from starlette.testclient import TestClient

from models.api_keys import ApiKey
from models.db import database, open_database
from models.identity import AccessToken, Membership, User, Workspace
from models.migrations import LATEST, current_version, migrate
from models.rate_limits import RateLimitCounter
from models.secrets import digest

MODELS = [Workspace, User, Membership, AccessToken, ApiKey, RateLimitCounter]


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


def test_a_fresh_database_gets_every_migration(db):
    assert migrate() == list(range(1, LATEST + 1))
    assert current_version() == LATEST
    assert migrate() == []


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_the_migrated_schema_matches_the_models(db, model):
    migrate()
    columns = {c.name: c for c in database.get_columns(model._meta.table_name)}
    fields = {f.column_name: f for f in model._meta.sorted_fields}
    assert set(columns) == set(fields)
    for name, field in fields.items():
        assert columns[name].null == field.null, name


def test_an_upgrade_keeps_an_earlier_releases_data(db, tmp_path, database_url):
    """A database as release 2 left it (API keys without rate limits) works after the upgrade."""
    migrate(target=2)
    assert current_version() == 2
    p = database.param
    now = datetime(2026, 11, 1, 12, 0, 0)
    rows = [
        ("INSERT INTO workspace (id, name, created_at) VALUES ({p}, {p}, {p})", ("w1", "old", now)),
        ('INSERT INTO "user" (id, email, display_name, is_active, created_at) VALUES ({p}, {p}, {p}, {p}, {p})',
         ("u1", "old@example.com", "Old", True, now)),
        ("INSERT INTO membership (workspace_id, user_id, role, created_at) VALUES ({p}, {p}, {p}, {p})",
         ("w1", "u1", "owner", now)),
        ("INSERT INTO access_token (id, user_id, token_hash, created_at) VALUES ({p}, {p}, {p}, {p})",
         ("t1", "u1", digest("vat_old-token"), now)),
        ("INSERT INTO api_key (id, workspace_id, user_id, name, key_hash, is_active, created_at, expires_at, permissions) "
         "VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p})",
         ("k1", "w1", "u1", "old key", digest("vak_old-key"), True, now, datetime.utcnow() + timedelta(days=30),
          '["api-keys:read"]')),
    ]
    with database.atomic():
        for sql, params in rows:
            database.execute_sql(sql.format(p=p), params)
    database.close()

    from api.app import create_app
    from api.settings import Settings
    app = create_app(Settings(database_url=database_url, data_dir=str(tmp_path)))
    with database.connection_context():
        assert current_version() == LATEST
        key = ApiKey.get_by_id("k1")
        assert (key.name, key.permissions, key.own_rate_limit()) == ("old key", ["api-keys:read"], None)
    with TestClient(app) as client:
        params = {"workspaceId": "w1"}
        listed = client.get("/api/v2/api-keys", params=params, headers={"Authorization": "Bearer vak_old-key"})
        assert listed.status_code == 200, listed.text
        assert [k["id"] for k in listed.json()["data"]["result"]["apiKeys"]] == ["k1"]
        created = client.post("/api/v2/api-keys", params=params, headers={"Authorization": "Bearer vat_old-token"},
                              json={"name": "new", "userId": "u1", "rateLimit": {"requestsPerMinute": 5, "requestsPerDay": 50}})
        assert created.status_code == 200, created.text
