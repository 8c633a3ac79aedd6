"""Personas: the simulated callers of simulations

A persona's name is unique per workspace without regard to case (the unique index on its folded
name, which also serves the list's order); its traits, facts, constraints and metadata are JSON.
"""

STATEMENTS = (
    """CREATE TABLE persona (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        name_key TEXT NOT NULL,
        goal TEXT NOT NULL,
        traits TEXT NOT NULL,
        language VARCHAR(35) NOT NULL,
        opening_line TEXT,
        facts TEXT NOT NULL,
        constraints TEXT NOT NULL,
        end_condition TEXT,
        metadata TEXT NOT NULL,
        created_by VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL)""",
    "CREATE UNIQUE INDEX persona_workspace_id_name_key ON persona (workspace_id, name_key)",
)
