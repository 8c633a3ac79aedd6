"""Received webhooks: the webhook-id of each signed end-of-call-report taken in

A row per workspace and webhook-id, written in the transaction that takes the report in and kept
for a while longer than a signature verifies, so that a replay of a signed report is answered
without being acted on again.
"""

STATEMENTS = (
    """CREATE TABLE received_webhook (
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        webhook_id VARCHAR(256) NOT NULL,
        received_at TIMESTAMP NOT NULL,
        PRIMARY KEY (workspace_id, webhook_id))""",
    # The periodic purge deletes by age across workspaces; a report looks its id up by the key.
    "CREATE INDEX received_webhook_received_at ON received_webhook (received_at)",
)
