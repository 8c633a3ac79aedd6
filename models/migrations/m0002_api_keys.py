"""API keys"""

STATEMENTS = (
    """CREATE TABLE api_key (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        user_id VARCHAR(255) NOT NULL REFERENCES "user" (id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        key_hash VARCHAR(255) NOT NULL UNIQUE,
        is_active BOOLEAN NOT NULL DEFAULT TRUE,
        created_at TIMESTAMP NOT NULL,
        last_used_at TIMESTAMP,
        expires_at TIMESTAMP NOT NULL,
        permissions TEXT NOT NULL)""",
    "CREATE INDEX api_key_workspace_id_created_at ON api_key (workspace_id, created_at)",
    "CREATE INDEX api_key_user_id ON api_key (user_id)",
)
