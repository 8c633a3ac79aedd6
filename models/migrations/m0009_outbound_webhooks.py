"""Outbound webhooks: subscriptions, the outbox of events, and the log of delivery attempts

An event is written in the transaction that records its call (the outbox), one per enabled
subscription; delivery workers claim due events (status, due time) and log each attempt. Deleting
a subscription or a call deletes its events and their attempts.
"""

STATEMENTS = (
    """CREATE TABLE webhook_subscription (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        url TEXT NOT NULL,
        events TEXT NOT NULL,
        description TEXT,
        enabled BOOLEAN NOT NULL,
        disabled_reason TEXT,
        secret_encrypted TEXT NOT NULL,
        previous_secret_encrypted TEXT,
        previous_secret_expires_at TIMESTAMP,
        failing_since TIMESTAMP,
        created_by VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL)""",
    "CREATE INDEX webhook_subscription_workspace_id_created_at_id ON webhook_subscription (workspace_id, created_at, id)",
    """CREATE TABLE webhook_event (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        subscription_id VARCHAR(255) NOT NULL REFERENCES webhook_subscription (id) ON DELETE CASCADE,
        event_type VARCHAR(64) NOT NULL,
        call_id VARCHAR(255) REFERENCES call (id) ON DELETE CASCADE,
        payload TEXT NOT NULL,
        status VARCHAR(32) NOT NULL,
        attempts INTEGER NOT NULL,
        next_attempt_at TIMESTAMP NOT NULL,
        lease_until TIMESTAMP,
        give_up_at TIMESTAMP NOT NULL,
        last_error TEXT,
        created_at TIMESTAMP NOT NULL,
        delivered_at TIMESTAMP)""",
    "CREATE INDEX webhook_event_status_next_attempt_at ON webhook_event (status, next_attempt_at)",
    "CREATE INDEX webhook_event_workspace_id_created_at_id ON webhook_event (workspace_id, created_at, id)",
    "CREATE INDEX webhook_event_subscription_id_created_at_id ON webhook_event (subscription_id, created_at, id)",
    "CREATE INDEX webhook_event_call_id ON webhook_event (call_id)",
    """CREATE TABLE webhook_attempt (
        id INTEGER NOT NULL PRIMARY KEY GENERATED_ID,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        event_id VARCHAR(255) NOT NULL REFERENCES webhook_event (id) ON DELETE CASCADE,
        subscription_id VARCHAR(255) NOT NULL REFERENCES webhook_subscription (id) ON DELETE CASCADE,
        attempt INTEGER NOT NULL,
        started_at TIMESTAMP NOT NULL,
        succeeded BOOLEAN NOT NULL,
        status_code INTEGER,
        latency_ms DOUBLE PRECISION NOT NULL,
        error TEXT,
        response_body TEXT)""",
    "CREATE INDEX webhook_attempt_subscription_id_id ON webhook_attempt (subscription_id, id)",
    "CREATE INDEX webhook_attempt_event_id_id ON webhook_attempt (event_id, id)",
)
