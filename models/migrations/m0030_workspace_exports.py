"""Whole-workspace exports: one row per export, its progress, its zip's path and expiry.

A unique index on (workspace_id, active), where active is 1 while an export is queued or running
and NULL after, lets a workspace hold one unfinished export at a time under any concurrency; the
others serve the list (newest first), the workers' claim (unfinished ones by age) and the purge of
expired files.
"""

STATEMENTS = (
    """CREATE TABLE workspace_export (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        status VARCHAR(16) NOT NULL,
        active SMALLINT,
        include_pii BOOLEAN NOT NULL,
        requested_by VARCHAR(255) NOT NULL,
        resources_total INTEGER NOT NULL,
        resources_done INTEGER NOT NULL,
        row_count BIGINT NOT NULL,
        size_bytes BIGINT,
        path TEXT,
        error TEXT,
        attempts INTEGER NOT NULL,
        lease_until TIMESTAMP,
        created_at TIMESTAMP NOT NULL,
        started_at TIMESTAMP,
        finished_at TIMESTAMP,
        expires_at TIMESTAMP,
        updated_at TIMESTAMP NOT NULL)""",
    "CREATE UNIQUE INDEX workspace_export_workspace_id_active ON workspace_export (workspace_id, active)",
    "CREATE INDEX workspace_export_workspace_id_created_at_id ON workspace_export (workspace_id, created_at, id)",
    "CREATE INDEX workspace_export_active_created_at_id ON workspace_export (active, created_at, id)",
    "CREATE INDEX workspace_export_expires_at ON workspace_export (expires_at)",
)
