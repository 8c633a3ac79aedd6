"""Integrations: a workspace's third-party credentials (telephony, LLM endpoint, CRM, agent runtime)

The secret is stored encrypted with the operator's key (models.kernel.encryption), beside a hint
of its last characters that answers show.
"""

STATEMENTS = (
    """CREATE TABLE integration (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        kind VARCHAR(16) NOT NULL,
        name TEXT NOT NULL,
        base_url TEXT,
        model TEXT,
        provider TEXT,
        account_id TEXT,
        secret TEXT NOT NULL,
        secret_hint VARCHAR(8) NOT NULL,
        created_by VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL,
        rotated_at TIMESTAMP)""",
    "CREATE INDEX integration_workspace_id_created_at_id ON integration (workspace_id, created_at, id)",
)
