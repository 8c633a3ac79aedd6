"""Starts the management API (uvicorn, $WORKERS processes) on $HOST:$API_PORT."""
from __future__ import annotations

import logging

import uvicorn

from models.db import database, open_database
from models.migrations import migrate

from .settings import Settings


def main() -> None:
    settings = Settings.from_env()
    logging.basicConfig(level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    # Migrate once here, before the workers start; each worker then finds the schema current.
    open_database(settings.database_url, settings.data_dir, settings.db_pool_size)
    with database.connection_context():
        migrate()
    logging.getLogger("api.serve").info("management API on http://%s:%d/api/v2 (docs: /api/v2/ui/)",
                                        settings.host, settings.api_port)
    uvicorn.run("api.app:create_app", factory=True, host=settings.host, port=settings.api_port,
                workers=settings.workers, access_log=False, log_level=settings.log_level.lower())


if __name__ == "__main__":
    main()
