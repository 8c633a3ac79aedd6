"""Agents and workflows, their versions and branches

Versions and branches serve both kinds of entity (entity_type, entity_id), so they refer to their
entity without a foreign key; the domain deletes them with it (models.configs.entities.delete).
"""

_ENTITY = """CREATE TABLE {table} (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        created_by VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL,
        version_count INTEGER NOT NULL,
        head_version_id VARCHAR(255),
        published_version_id VARCHAR(255))"""

STATEMENTS = (
    _ENTITY.format(table="agent"),
    "CREATE INDEX agent_workspace_id_created_at_id ON agent (workspace_id, created_at, id)",
    _ENTITY.format(table="workflow"),
    "CREATE INDEX workflow_workspace_id_created_at_id ON workflow (workspace_id, created_at, id)",
    """CREATE TABLE entity_version (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        entity_type VARCHAR(255) NOT NULL,
        entity_id VARCHAR(255) NOT NULL,
        version_number INTEGER NOT NULL,
        parent_version_id VARCHAR(255),
        branch_id VARCHAR(255),
        name TEXT NOT NULL,
        config TEXT NOT NULL,
        config_diff_summary TEXT NOT NULL,
        created_by VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL,
        is_published BOOLEAN NOT NULL,
        published_at TIMESTAMP,
        published_by VARCHAR(255))""",
    ("CREATE UNIQUE INDEX entity_version_workspace_id_entity_type_entity_id_version_number "
     "ON entity_version (workspace_id, entity_type, entity_id, version_number)"),
    """CREATE TABLE branch (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        entity_type VARCHAR(255) NOT NULL,
        entity_id VARCHAR(255) NOT NULL,
        name TEXT NOT NULL,
        status VARCHAR(255) NOT NULL,
        base_version_id VARCHAR(255) NOT NULL,
        head_version_id VARCHAR(255) NOT NULL,
        commit_count INTEGER NOT NULL,
        merged_version_id VARCHAR(255),
        created_by VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL)""",
    ("CREATE INDEX branch_workspace_id_entity_type_entity_id_created_at_id "
     "ON branch (workspace_id, entity_type, entity_id, created_at, id)"),
    """CREATE TABLE workflow_agent (
        id INTEGER NOT NULL PRIMARY KEY GENERATED_ID,
        version_id VARCHAR(255) NOT NULL REFERENCES entity_version (id) ON DELETE CASCADE,
        workflow_id VARCHAR(255) NOT NULL,
        agent_id VARCHAR(255) NOT NULL)""",
    "CREATE INDEX workflow_agent_version_id ON workflow_agent (version_id)",
    "CREATE INDEX workflow_agent_agent_id ON workflow_agent (agent_id)",
)
