"""Optimization: each workspace's number of runs by status, and an index for the sort on status

The unfiltered list of runs read its summary and total by counting every run of the workspace;
it now reads them from optimization_run_tally, which every change of a run's existence or status
keeps exact. The data step counts the runs that exist already. The sort on status breaks ties on
created_at then id, which the new index holds (the one it replaces lacked the id).
"""

STATEMENTS = (
    """CREATE TABLE optimization_run_tally (
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        status VARCHAR(16) NOT NULL,
        runs BIGINT NOT NULL,
        PRIMARY KEY (workspace_id, status))""",
    "DROP INDEX optimization_run_workspace_id_status_created_at",
    "CREATE INDEX optimization_run_workspace_id_status_created_at_id "
    "ON optimization_run (workspace_id, status, created_at, id)",
)


def apply(database) -> None:
    database.execute_sql("""
        INSERT INTO optimization_run_tally (workspace_id, status, runs)
        SELECT workspace_id, status, COUNT(*) FROM optimization_run GROUP BY workspace_id, status""")
