"""Optimization: runs, the feedback each works from, their solutions and the feedback each solution
addresses; the feedback a version closes

A run's generation is leased work (models.kernel.leases): its status and lease say whether a worker
holds it. A version lists the feedback it closed ({id, number, title}), as the acceptance of a
solution recorded it.
"""

STATEMENTS = (
    """CREATE TABLE optimization_run (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        agent_id VARCHAR(255) NOT NULL,
        status VARCHAR(16) NOT NULL,
        optimizer VARCHAR(16) NOT NULL,
        instructions TEXT,
        base_version_id VARCHAR(255),
        feedback_count INTEGER NOT NULL,
        solution_count INTEGER NOT NULL,
        accepted_count INTEGER NOT NULL,
        rejected_count INTEGER NOT NULL,
        error TEXT,
        dropped TEXT,
        attempts INTEGER NOT NULL,
        lease_until TIMESTAMP,
        created_by VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL,
        completed_at TIMESTAMP)""",
    "CREATE INDEX optimization_run_workspace_id_created_at_id ON optimization_run (workspace_id, created_at, id)",
    "CREATE INDEX optimization_run_workspace_id_status_created_at ON optimization_run (workspace_id, status, created_at)",
    "CREATE INDEX optimization_run_workspace_id_agent_id_created_at ON optimization_run (workspace_id, agent_id, created_at)",
    "CREATE INDEX optimization_run_workspace_id_feedback_count_id ON optimization_run (workspace_id, feedback_count, id)",
    "CREATE INDEX optimization_run_workspace_id_solution_count_id ON optimization_run (workspace_id, solution_count, id)",
    "CREATE INDEX optimization_run_status_lease_until ON optimization_run (status, lease_until)",
    """CREATE TABLE optimization_run_feedback (
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        run_id VARCHAR(255) NOT NULL REFERENCES optimization_run (id) ON DELETE CASCADE,
        feedback_id VARCHAR(255) NOT NULL REFERENCES feedback (id) ON DELETE CASCADE,
        PRIMARY KEY (run_id, feedback_id))""",
    "CREATE INDEX optimization_run_feedback_feedback_id ON optimization_run_feedback (feedback_id)",
    """CREATE TABLE solution (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        run_id VARCHAR(255) NOT NULL REFERENCES optimization_run (id) ON DELETE CASCADE,
        title TEXT NOT NULL,
        change TEXT NOT NULL,
        explanation TEXT NOT NULL,
        display_order INTEGER NOT NULL,
        decision VARCHAR(16),
        patch_decisions TEXT,
        version_id VARCHAR(255),
        created_at TIMESTAMP NOT NULL,
        reviewed_at TIMESTAMP)""",
    "CREATE INDEX solution_run_id_display_order ON solution (run_id, display_order)",
    """CREATE TABLE solution_feedback (
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        solution_id VARCHAR(255) NOT NULL REFERENCES solution (id) ON DELETE CASCADE,
        feedback_id VARCHAR(255) NOT NULL REFERENCES feedback (id) ON DELETE CASCADE,
        PRIMARY KEY (solution_id, feedback_id))""",
    "CREATE INDEX solution_feedback_feedback_id ON solution_feedback (feedback_id)",
    "ALTER TABLE entity_version ADD COLUMN closed_feedbacks TEXT",
)
