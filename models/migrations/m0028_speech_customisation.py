"""Speech customisation: a workspace's vocabulary

A term's written form is unique per workspace without regard to case (a unique index on the folded
form, which also serves the list in that order). The speech filter is a workspace setting, in the
workspace's settings column: no table of its own.
"""

STATEMENTS = (
    """CREATE TABLE vocabulary_term (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        written TEXT NOT NULL,
        written_key TEXT NOT NULL,
        spoken TEXT NOT NULL,
        created_by VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL)""",
    "CREATE UNIQUE INDEX vocabulary_term_workspace_id_written_key ON vocabulary_term (workspace_id, written_key)",
)
