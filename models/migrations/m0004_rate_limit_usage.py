"""rate-limit usage: one row per credential, counted by one upsert

The counters of release 3 (a row per credential and window) carry over: each credential's
latest minute and latest day keep their hits, so nobody's day starts afresh at the upgrade.
"""

STATEMENTS = (
    """CREATE TABLE rate_limit_usage (
        credential_id VARCHAR(255) NOT NULL PRIMARY KEY,
        minute BIGINT NOT NULL,
        minute_hits INTEGER NOT NULL,
        day BIGINT NOT NULL,
        day_hits INTEGER NOT NULL)""",
    """INSERT INTO rate_limit_usage (credential_id, minute, minute_hits, day, day_hits)
        SELECT d.credential_id, COALESCE(m.window_start, 0), COALESCE(m.hits, 0), d.window_start, d.hits
        FROM rate_limit_counter d
        LEFT JOIN rate_limit_counter m ON m.credential_id = d.credential_id AND m.window_kind = 'm'
            AND m.window_start = (SELECT MAX(x.window_start) FROM rate_limit_counter x
                                  WHERE x.credential_id = d.credential_id AND x.window_kind = 'm')
        WHERE d.window_kind = 'd'
            AND d.window_start = (SELECT MAX(y.window_start) FROM rate_limit_counter y
                                  WHERE y.credential_id = d.credential_id AND y.window_kind = 'd')""",
    "DROP TABLE rate_limit_counter",
)
