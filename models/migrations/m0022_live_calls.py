"""Live calls: calls registered as they start, their status moves and their control requests

A runtime registers a call under its own callId (unique per workspace), moves its status while it
runs, and takes the control requests people send it (transfers, resumes, messages) by webhook or by
claim; the call's end-of-call-report ends it and links it to the recorded call.
"""

STATEMENTS = (
    """CREATE TABLE live_call (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        call_id VARCHAR(128) NOT NULL,
        direction VARCHAR(16) NOT NULL,
        entity_type VARCHAR(16) NOT NULL,
        entity_id VARCHAR(255) NOT NULL,
        version_id VARCHAR(255) NOT NULL,
        from_number VARCHAR(32) NOT NULL,
        to_number VARCHAR(32) NOT NULL,
        campaign_id VARCHAR(255),
        contact_id VARCHAR(255),
        status VARCHAR(16) NOT NULL,
        status_reason TEXT,
        status_at TIMESTAMP,
        registered_at TIMESTAMP NOT NULL,
        ringing_at TIMESTAMP,
        answered_at TIMESTAMP,
        ended_at TIMESTAMP,
        updated_at TIMESTAMP NOT NULL,
        recorded_call_id VARCHAR(255))""",
    "CREATE UNIQUE INDEX live_call_workspace_id_call_id ON live_call (workspace_id, call_id)",
    "CREATE INDEX live_call_workspace_id_registered_at_id ON live_call (workspace_id, registered_at, id)",
    """CREATE TABLE live_call_move (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        live_call_id VARCHAR(255) NOT NULL REFERENCES live_call (id) ON DELETE CASCADE,
        from_status VARCHAR(16) NOT NULL,
        to_status VARCHAR(16) NOT NULL,
        at TIMESTAMP NOT NULL,
        reason TEXT,
        recorded_at TIMESTAMP NOT NULL)""",
    "CREATE INDEX live_call_move_live_call_id_recorded_at_id ON live_call_move (live_call_id, recorded_at, id)",
    """CREATE TABLE live_call_control (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        live_call_id VARCHAR(255) NOT NULL REFERENCES live_call (id) ON DELETE CASCADE,
        call_id VARCHAR(128) NOT NULL,
        kind VARCHAR(16) NOT NULL,
        request TEXT NOT NULL,
        state VARCHAR(16) NOT NULL,
        error TEXT,
        created_by VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL,
        delivered_at TIMESTAMP,
        completed_at TIMESTAMP,
        updated_at TIMESTAMP NOT NULL)""",
    "CREATE INDEX live_call_control_live_call_id_created_at_id ON live_call_control (live_call_id, created_at, id)",
    "CREATE INDEX live_call_control_workspace_id_state_created_at_id "
    "ON live_call_control (workspace_id, state, created_at, id)",
)
