"""per-key rate limits and their counters"""

STATEMENTS = (
    "ALTER TABLE api_key ADD COLUMN requests_per_minute INTEGER",
    "ALTER TABLE api_key ADD COLUMN requests_per_day INTEGER",
    """CREATE TABLE rate_limit_counter (
        credential_id VARCHAR(255) NOT NULL,
        window_kind VARCHAR(255) NOT NULL,
        window_start BIGINT NOT NULL,
        hits INTEGER NOT NULL,
        PRIMARY KEY (credential_id, window_kind, window_start))""",
)
