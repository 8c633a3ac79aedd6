"""The one start-up sequence of every entry point: logging, the database, the schema."""
from __future__ import annotations

import logging

from models.db import open_database, session
from models.migrations import migrate

from .settings import Settings

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def boot(settings: Settings, *, migrate_schema: bool = True, log_level: str | int | None = None) -> None:
    """Configure logging, bind the models to the configured database and bring its schema up to date.

    Migrating is safe from several processes at once (see models.migrations); ``migrate_schema``
    is off where a parent process has migrated already.
    """
    logging.basicConfig(level=log_level or settings.log_level, format=LOG_FORMAT)
    open_database(settings.database_url, settings.data_dir, settings.db_pool_size)
    if migrate_schema:
        with session():
            migrate()
