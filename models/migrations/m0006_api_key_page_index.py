"""API keys listed along one index: (workspace_id, created_at, id)

The list orders newest first with the id breaking ties; with the id in the index the database
reads a page's rows straight off it instead of sorting every key of the workspace.
"""

STATEMENTS = (
    "DROP INDEX api_key_workspace_id_created_at",
    "CREATE INDEX api_key_workspace_id_created_at_id ON api_key (workspace_id, created_at, id)",
)
