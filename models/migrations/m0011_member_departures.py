"""Member departures: when a user last left each workspace, so that no access token they held before it acts there again

A user's access tokens reach every workspace they are a member of. Removal from a workspace (or
leaving it) records the moment here; a membership made when the user joins again carries it as
``tokens_since``, and admission refuses, in that workspace, any token created before it
(models.identity.credentials): a column of the row admission reads anyway, not a lookup per request.
"""

STATEMENTS = (
    """CREATE TABLE member_departure (
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        user_id VARCHAR(255) NOT NULL REFERENCES "user" (id) ON DELETE CASCADE,
        departed_at TIMESTAMP NOT NULL,
        PRIMARY KEY (workspace_id, user_id))""",
    "CREATE INDEX member_departure_user_id ON member_departure (user_id)",
    "ALTER TABLE membership ADD COLUMN tokens_since TIMESTAMP",
)
