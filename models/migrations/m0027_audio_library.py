"""Audio library: a workspace's uploaded audio files

One row per file, naming the file under DATA_DIR/audio/<workspace>/ and what PyAV read of it; the
two indexes serve the list, newest first, whole or of one kind.
"""

STATEMENTS = (
    """CREATE TABLE audio_file (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        kind VARCHAR(32) NOT NULL,
        path TEXT NOT NULL,
        content_type VARCHAR(64) NOT NULL,
        bytes BIGINT NOT NULL,
        format VARCHAR(32) NOT NULL,
        duration_seconds DOUBLE PRECISION NOT NULL,
        sample_rate INTEGER NOT NULL,
        channels INTEGER NOT NULL,
        created_by VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL)""",
    "CREATE INDEX audio_file_workspace_id_created_at_id ON audio_file (workspace_id, created_at, id)",
    "CREATE INDEX audio_file_workspace_id_kind_created_at_id ON audio_file (workspace_id, kind, created_at, id)",
)
