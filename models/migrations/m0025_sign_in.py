"""Sign-in: passwords, TOTP second factors, their recovery codes, sign-in challenges and the per-account throttle

A password is stored as its argon2id hash, a second factor's secret encrypted (it must be read
back to check a code), recovery codes and challenges as their SHA-256. The throttle counts
failed sign-in steps per email, in the database, so that the limit holds across processes.
"""

STATEMENTS = (
    """CREATE TABLE user_password (
        user_id VARCHAR(255) NOT NULL PRIMARY KEY REFERENCES "user" (id) ON DELETE CASCADE,
        password_hash TEXT NOT NULL,
        updated_at TIMESTAMP NOT NULL)""",
    """CREATE TABLE user_mfa (
        user_id VARCHAR(255) NOT NULL PRIMARY KEY REFERENCES "user" (id) ON DELETE CASCADE,
        secret TEXT NOT NULL,
        created_at TIMESTAMP NOT NULL,
        confirmed_at TIMESTAMP,
        last_step BIGINT)""",
    """CREATE TABLE mfa_recovery_code (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        user_id VARCHAR(255) NOT NULL REFERENCES "user" (id) ON DELETE CASCADE,
        code_hash VARCHAR(255) NOT NULL,
        used_at TIMESTAMP)""",
    "CREATE UNIQUE INDEX mfa_recovery_code_user_id_code_hash ON mfa_recovery_code (user_id, code_hash)",
    """CREATE TABLE sign_in_challenge (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        user_id VARCHAR(255) NOT NULL REFERENCES "user" (id) ON DELETE CASCADE,
        purpose VARCHAR(255) NOT NULL,
        token_hash VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL,
        expires_at TIMESTAMP NOT NULL,
        used_at TIMESTAMP)""",
    "CREATE UNIQUE INDEX sign_in_challenge_token_hash ON sign_in_challenge (token_hash)",
    "CREATE INDEX sign_in_challenge_user_id ON sign_in_challenge (user_id)",
    """CREATE TABLE sign_in_throttle (
        email VARCHAR(255) NOT NULL PRIMARY KEY,
        failures INTEGER NOT NULL,
        window_started_at TIMESTAMP NOT NULL)""",
)
