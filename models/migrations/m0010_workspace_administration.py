"""Workspace administration: settings, custom roles, invitations, named access tokens, the credits ledger, the audit log

A membership's role is a built-in role's name or the id of one of the workspace's custom roles.
The credits ledger is append-only; ``workspace.credit_balance`` is its running sum, updated in
the transaction of each entry. Audit entries go with their workspace.
"""

STATEMENTS = (
    "ALTER TABLE workspace ADD COLUMN settings TEXT NOT NULL DEFAULT '{}'",
    "ALTER TABLE workspace ADD COLUMN data_retention_days INTEGER",
    "ALTER TABLE workspace ADD COLUMN credit_balance BIGINT NOT NULL DEFAULT 0",
    "ALTER TABLE workspace ADD COLUMN updated_at TIMESTAMP",
    "ALTER TABLE access_token ADD COLUMN name TEXT",
    """CREATE TABLE workspace_role (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        name VARCHAR(255) NOT NULL,
        description TEXT,
        permissions TEXT NOT NULL,
        created_by VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL)""",
    "CREATE UNIQUE INDEX workspace_role_workspace_id_name ON workspace_role (workspace_id, name)",
    "CREATE INDEX membership_workspace_id_role ON membership (workspace_id, role)",
    """CREATE TABLE invitation (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        email VARCHAR(255) NOT NULL,
        role VARCHAR(255) NOT NULL,
        token_hash VARCHAR(255) NOT NULL UNIQUE,
        invited_by VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL,
        expires_at TIMESTAMP NOT NULL,
        accepted_at TIMESTAMP,
        accepted_by VARCHAR(255),
        revoked_at TIMESTAMP)""",
    "CREATE INDEX invitation_workspace_id_created_at_id ON invitation (workspace_id, created_at, id)",
    """CREATE TABLE credit_entry (
        id INTEGER NOT NULL PRIMARY KEY GENERATED_ID,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        kind VARCHAR(32) NOT NULL,
        amount BIGINT NOT NULL,
        quantity DOUBLE PRECISION NOT NULL,
        unit VARCHAR(32) NOT NULL,
        reference VARCHAR(255),
        description TEXT,
        created_by VARCHAR(255),
        created_at TIMESTAMP NOT NULL)""",
    "CREATE INDEX credit_entry_workspace_id_created_at_id ON credit_entry (workspace_id, created_at, id)",
    "CREATE UNIQUE INDEX credit_entry_workspace_id_reference ON credit_entry (workspace_id, reference)",
    """CREATE TABLE audit_entry (
        id INTEGER NOT NULL PRIMARY KEY GENERATED_ID,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        occurred_at TIMESTAMP NOT NULL,
        actor_user_id VARCHAR(255),
        actor_credential_id VARCHAR(255),
        actor_kind VARCHAR(32) NOT NULL,
        operation_id VARCHAR(255) NOT NULL,
        resource_type VARCHAR(255) NOT NULL,
        resource_id VARCHAR(255),
        request_id VARCHAR(255),
        source_address VARCHAR(255),
        changes TEXT NOT NULL)""",
    "CREATE INDEX audit_entry_workspace_id_occurred_at_id ON audit_entry (workspace_id, occurred_at, id)",
    "CREATE INDEX audit_entry_workspace_id_actor_user_id_occurred_at ON audit_entry (workspace_id, actor_user_id, occurred_at)",
)
