"""Chat sessions: sessions pinned to a version of an agent or a workflow, and their messages

A session keeps the agent side it started with (its prompt, first message, end-call phrases and
model settings, as a JSON object) and its running totals: messages, tokens, the last message's
time. Messages are numbered 1, 2, 3... per session under a unique index, the order of the
conversation.
"""

STATEMENTS = (
    """CREATE TABLE chat_session (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        entity_type VARCHAR(16) NOT NULL,
        entity_id VARCHAR(255) NOT NULL,
        version_id VARCHAR(255) NOT NULL,
        version_number INTEGER NOT NULL,
        agent_id VARCHAR(255) NOT NULL,
        agent TEXT NOT NULL,
        created_by VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL,
        last_message_at TIMESTAMP,
        message_count INTEGER NOT NULL,
        prompt_tokens INTEGER NOT NULL,
        completion_tokens INTEGER NOT NULL,
        ended_at TIMESTAMP)""",
    "CREATE INDEX chat_session_workspace_id_entity_type_entity_id_created_at_id "
    "ON chat_session (workspace_id, entity_type, entity_id, created_at, id)",
    """CREATE TABLE chat_message (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        session_id VARCHAR(255) NOT NULL REFERENCES chat_session (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        role VARCHAR(8) NOT NULL,
        text TEXT NOT NULL,
        created_at TIMESTAMP NOT NULL,
        prompt_tokens INTEGER,
        completion_tokens INTEGER)""",
    "CREATE UNIQUE INDEX chat_message_session_id_seq ON chat_message (session_id, seq)",
)
