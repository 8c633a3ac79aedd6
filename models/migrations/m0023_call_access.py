"""Call access: single-use web-call tokens and share links of calls

A web-call token names a version of an agent that a browser page (or the runtime on its behalf)
may start a call with, once, before it expires: it is stored as its SHA-256 (unique), and marked
redeemed by the one UPDATE that checks it still is not. A share link shows one call, without a
credential, until it expires or is revoked: stored as its SHA-256 (unique) too, and deleted with
its call (the foreign key cascades).
"""

STATEMENTS = (
    """CREATE TABLE web_call_token (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        token_hash VARCHAR(255) NOT NULL,
        agent_id VARCHAR(255) NOT NULL REFERENCES agent (id) ON DELETE CASCADE,
        version_id VARCHAR(255) NOT NULL REFERENCES entity_version (id) ON DELETE CASCADE,
        version_number INTEGER NOT NULL,
        created_by VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL,
        expires_at TIMESTAMP NOT NULL,
        redeemed_at TIMESTAMP)""",
    "CREATE UNIQUE INDEX web_call_token_token_hash ON web_call_token (token_hash)",
    "CREATE INDEX web_call_token_workspace_id_created_at_id ON web_call_token (workspace_id, created_at, id)",
    "CREATE INDEX web_call_token_agent_id ON web_call_token (agent_id)",
    "CREATE INDEX web_call_token_version_id ON web_call_token (version_id)",
    """CREATE TABLE call_share_link (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        call_id VARCHAR(255) NOT NULL REFERENCES call (id) ON DELETE CASCADE,
        token_hash VARCHAR(255) NOT NULL,
        include_recording BOOLEAN NOT NULL,
        created_by VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL,
        expires_at TIMESTAMP NOT NULL,
        revoked_at TIMESTAMP)""",
    "CREATE UNIQUE INDEX call_share_link_token_hash ON call_share_link (token_hash)",
    "CREATE INDEX call_share_link_call_id_created_at_id ON call_share_link (call_id, created_at, id)",
)
