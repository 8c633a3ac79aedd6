"""Syncs: a version of an agent's or workflow's configuration pushed to a runtime integration.

The entity, the version and the integration are plain ids, not foreign keys, so that a sync
outlives an agent deleted while it waits (it fails, saying why). The indexes serve the list of an
entity's syncs (newest first) and the workers' claim (the most overdue unfinished sync; a finished
one's next_attempt_at is NULL).
"""

STATEMENTS = (
    """CREATE TABLE config_sync (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        entity_type VARCHAR(16) NOT NULL,
        entity_id VARCHAR(255) NOT NULL,
        version_id VARCHAR(255) NOT NULL,
        version_number INTEGER NOT NULL,
        integration_id VARCHAR(255) NOT NULL,
        status VARCHAR(16) NOT NULL,
        attempts INTEGER NOT NULL,
        next_attempt_at TIMESTAMP,
        lease_until TIMESTAMP,
        response_status SMALLINT,
        response_body TEXT,
        response_latency_ms DOUBLE PRECISION,
        error TEXT,
        requested_by VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL,
        finished_at TIMESTAMP,
        updated_at TIMESTAMP NOT NULL)""",
    "CREATE INDEX config_sync_workspace_id_entity_type_entity_id_created_at_id "
    "ON config_sync (workspace_id, entity_type, entity_id, created_at, id)",
    "CREATE INDEX config_sync_next_attempt_at ON config_sync (next_attempt_at)",
)
