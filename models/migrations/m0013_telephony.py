"""Telephony: business-hours schedules, phone numbers and their inbound routing, the phone book and
the do-not-call list

A phone number belongs to one workspace across the service (its E.164 form is unique). A schedule
may be deleted while numbers use it (they lose their hours); a campaign holds on to its number and schedule (deleting either while a campaign uses it is refused).
"""

STATEMENTS = (
    """CREATE TABLE schedule (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        name_key TEXT NOT NULL,
        time_zone VARCHAR(64) NOT NULL,
        weekly_hours TEXT NOT NULL,
        exceptions TEXT NOT NULL,
        created_by VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL)""",
    "CREATE UNIQUE INDEX schedule_workspace_id_name_key ON schedule (workspace_id, name_key)",
    "CREATE INDEX schedule_workspace_id_created_at_id ON schedule (workspace_id, created_at, id)",
    """CREATE TABLE phone_number (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        number VARCHAR(32) NOT NULL,
        label TEXT,
        provider TEXT,
        inbound BOOLEAN NOT NULL,
        outbound BOOLEAN NOT NULL,
        inbound_target_type VARCHAR(16),
        inbound_target_id VARCHAR(255),
        schedule_id VARCHAR(255) REFERENCES schedule (id) ON DELETE SET NULL,
        after_hours_target_type VARCHAR(16),
        after_hours_target_id VARCHAR(255),
        created_by VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL)""",
    "CREATE UNIQUE INDEX phone_number_number ON phone_number (number)",
    "CREATE INDEX phone_number_workspace_id_created_at_id ON phone_number (workspace_id, created_at, id)",
    "CREATE INDEX phone_number_workspace_id_inbound_target_id ON phone_number (workspace_id, inbound_target_id)",
    "CREATE INDEX phone_number_workspace_id_after_hours_target_id ON phone_number (workspace_id, after_hours_target_id)",
    "CREATE INDEX phone_number_schedule_id ON phone_number (schedule_id)",
    """CREATE TABLE phone_alias (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        name_key TEXT NOT NULL,
        number VARCHAR(32) NOT NULL,
        created_by VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL)""",
    "CREATE UNIQUE INDEX phone_alias_workspace_id_name_key ON phone_alias (workspace_id, name_key)",
    "CREATE UNIQUE INDEX phone_alias_workspace_id_number ON phone_alias (workspace_id, number)",
    "CREATE INDEX phone_alias_workspace_id_created_at_id ON phone_alias (workspace_id, created_at, id)",
    """CREATE TABLE suppressed_number (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        number VARCHAR(32) NOT NULL,
        reason TEXT,
        source VARCHAR(32) NOT NULL,
        added_by VARCHAR(255) NOT NULL,
        added_at TIMESTAMP NOT NULL,
        expires_at TIMESTAMP)""",
    "CREATE UNIQUE INDEX suppressed_number_workspace_id_number ON suppressed_number (workspace_id, number)",
    "CREATE INDEX suppressed_number_workspace_id_added_at_id ON suppressed_number (workspace_id, added_at, id)",
)
