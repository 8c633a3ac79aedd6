"""The domain's tests run on a migrated database of their own, without the HTTP app."""
from __future__ import annotations

import pytest

from models.kernel.db import database, open_database
from models.migrations import migrate


@pytest.fixture
def db(database_url, tmp_path):
    """A migrated database (SQLite in tmp_path, or a scratch PostgreSQL one); its URL."""
    open_database(database_url, tmp_path)
    with database.connection_context():
        migrate()
        yield database_url
    database.close()
    if hasattr(database.obj, "close_all"):
        database.close_all()
