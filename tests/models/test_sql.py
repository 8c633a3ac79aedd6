"""Compiled SQL: the same rows as Peewee's own queries, and PostgreSQL prepares each statement once."""
from __future__ import annotations

import logging

import pytest

from models.identity.api_keys import _PAGE, ApiKeyRecord
from models.identity.tables import ApiKey
from models.kernel.db import database, open_database, session
from models.kernel.sql import Statement, _ServerPrepared
from models.migrations import migrate
from tests.support import factories


@pytest.fixture
def db(database_url, tmp_path):
    open_database(database_url, tmp_path)
    with session():
        migrate()
    yield
    if hasattr(database.obj, "close_all"):
        database.close_all()


def test_placeholders_are_numbered_and_literal_percents_kept():
    prepared = _ServerPrepared("SELECT a FROM t WHERE b = %s AND c LIKE 'x%%' AND d = %s", "SET x; ")
    assert prepared.prepare.endswith("WHERE b = $1 AND c LIKE 'x%' AND d = $2")
    assert prepared.execute_sql == f"SET x; EXECUTE {prepared.name} (%s, %s)"


def test_a_prepared_page_returns_what_peewee_does(db):
    owner = factories.workspace()
    for _ in range(5):
        factories.api_key(owner)
    with session():
        page = _PAGE[True].page(ApiKeyRecord, workspace_id=owner.workspace_id, limit=3, offset=1)
        expected = list(ApiKey.in_workspace(owner.workspace_id)
                        .order_by(ApiKey.created_at.desc(), ApiKey.id.desc()).limit(3).offset(1))
        assert [r.id for r in page.items] == [k.id for k in expected]
        assert [(r.created_at, r.expires_at, r.is_active, r.permissions) for r in page.items] == \
               [(k.created_at, k.expires_at, k.is_active, k.permissions) for k in expected]
        assert page.pagination() == {"total": 5, "limit": 3, "offset": 1}


@pytest.mark.parametrize("offset, items, total", [(4, 1, 5), (5, 0, 5), (100, 0, 5)])
def test_a_page_counts_every_row_however_few_it_holds(db, offset, items, total):
    owner = factories.workspace()
    for _ in range(5):
        factories.api_key(owner)
    with session():
        page = _PAGE[True].page(ApiKeyRecord, workspace_id=owner.workspace_id, limit=3, offset=offset)
        assert (len(page.items), page.total) == (items, total)
        empty = _PAGE[True].page(ApiKeyRecord, workspace_id="none", limit=3, offset=0)
        assert (empty.items, empty.total) == ([], 0)


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_postgres_prepares_a_statement_once_per_connection(db, caplog):
    statement = Statement("SELECT {p} + 1")
    with caplog.at_level(logging.DEBUG, logger="peewee"), session():
        assert [statement.one(i)[0] for i in range(3)] == [1, 2, 3]
    sent = [r.msg[0] for r in caplog.records if r.name == "peewee" and isinstance(r.msg, tuple)]
    assert sum(s.startswith("PREPARE") for s in sent) == 1 and sum("EXECUTE" in s for s in sent) == 3
