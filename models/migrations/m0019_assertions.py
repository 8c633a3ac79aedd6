"""Unit tests: suites of assertions and their assignments to agents and workflows

A suite's name is unique in its workspace without regard to case (name_key, folded). An assertion
keeps its kind's parameters as one JSON document. An assignment names an agent or a workflow by
kind and id; deleting the entity deletes its assignments (models.entity_users).
"""

STATEMENTS = (
    """CREATE TABLE assertion_suite (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        name_key TEXT NOT NULL,
        description TEXT,
        created_by VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL)""",
    "CREATE UNIQUE INDEX assertion_suite_workspace_id_name_key ON assertion_suite (workspace_id, name_key)",
    """CREATE TABLE assertion (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        suite_id VARCHAR(255) NOT NULL REFERENCES assertion_suite (id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        kind VARCHAR(16) NOT NULL,
        params TEXT NOT NULL,
        created_by VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL)""",
    "CREATE INDEX assertion_suite_id_created_at_id ON assertion (suite_id, created_at, id)",
    """CREATE TABLE suite_assignment (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        suite_id VARCHAR(255) NOT NULL REFERENCES assertion_suite (id) ON DELETE CASCADE,
        entity_type VARCHAR(16) NOT NULL,
        entity_id VARCHAR(255) NOT NULL,
        assigned_by VARCHAR(255) NOT NULL,
        assigned_at TIMESTAMP NOT NULL)""",
    "CREATE UNIQUE INDEX suite_assignment_suite_id_entity_type_entity_id "
    "ON suite_assignment (suite_id, entity_type, entity_id)",
    "CREATE INDEX suite_assignment_workspace_id_entity_type_entity_id "
    "ON suite_assignment (workspace_id, entity_type, entity_id)",
)
