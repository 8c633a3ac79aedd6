"""Audio transcriptions: an audio library file's transcript by the project's own engine, on demand

One row per file, its transcript and the leased job that makes it (the transcription workers claim
it beside the call recordings' jobs); it goes with its file. The index serves the claim.
"""

STATEMENTS = (
    """CREATE TABLE audio_transcription (
        audio_id VARCHAR(255) NOT NULL PRIMARY KEY REFERENCES audio_file (id) ON DELETE CASCADE,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        status VARCHAR(16) NOT NULL,
        attempts INTEGER NOT NULL,
        lease_until TIMESTAMP,
        error TEXT,
        text TEXT,
        words TEXT,
        language VARCHAR(32),
        duration_seconds DOUBLE PRECISION,
        requested_by VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL,
        finished_at TIMESTAMP)""",
    "CREATE INDEX audio_transcription_status_lease_until ON audio_transcription (status, lease_until)",
)
