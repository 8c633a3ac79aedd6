"""workspaces, users, memberships, access tokens"""

STATEMENTS = (
    """CREATE TABLE workspace (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        name TEXT NOT NULL,
        created_at TIMESTAMP NOT NULL)""",
    """CREATE TABLE "user" (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        email VARCHAR(255) NOT NULL UNIQUE,
        display_name TEXT,
        is_active BOOLEAN NOT NULL DEFAULT TRUE,
        created_at TIMESTAMP NOT NULL)""",
    """CREATE TABLE membership (
        id INTEGER NOT NULL PRIMARY KEY GENERATED_ID,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        user_id VARCHAR(255) NOT NULL REFERENCES "user" (id) ON DELETE CASCADE,
        role VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL)""",
    "CREATE UNIQUE INDEX membership_workspace_id_user_id ON membership (workspace_id, user_id)",
    "CREATE INDEX membership_user_id ON membership (user_id)",
    """CREATE TABLE access_token (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        user_id VARCHAR(255) NOT NULL REFERENCES "user" (id) ON DELETE CASCADE,
        token_hash VARCHAR(255) NOT NULL UNIQUE,
        created_at TIMESTAMP NOT NULL,
        expires_at TIMESTAMP,
        last_used_at TIMESTAMP)""",
    "CREATE INDEX access_token_user_id ON access_token (user_id)",
)
