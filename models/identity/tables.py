"""The tables of who may do what: users, memberships, access tokens, API keys, custom roles,
invitations and rate-limit usage (models.identity). The workspace itself is the tenant row of
models.kernel.scoping, which every scoped table refers to."""
from __future__ import annotations

from peewee import (
    BigIntegerField,
    BooleanField,
    CharField,
    CompositeKey,
    DateTimeField,
    ForeignKeyField,
    IntegerField,
    TextField,
)

from models.kernel.db import BaseModel, FrozenListField, new_id, utcnow
from models.kernel.scoping import Workspace, WorkspaceScoped


class User(BaseModel):
    id = CharField(primary_key=True, default=new_id)
    email = CharField(unique=True)
    display_name = TextField(null=True)
    # A deactivated user's tokens and keys stop working without being deleted.
    is_active = BooleanField(default=True)
    created_at = DateTimeField(default=utcnow)


class Membership(BaseModel):
    # Indexed by the unique (workspace, user) below.
    workspace = ForeignKeyField(Workspace, on_delete="CASCADE", backref="memberships", index=False)
    user = ForeignKeyField(User, on_delete="CASCADE", backref="memberships")
    # The name of a built-in role (see permissions.ROLES) or the id of a custom role (models.identity.roles).
    role = CharField()
    created_at = DateTimeField(default=utcnow)
    # Access tokens created at or before this act not in this workspace: the moment the user last
    # left it, for a membership that is a return (models.identity.members.returning_since).
    tokens_since = DateTimeField(null=True)

    class Meta:
        indexes = ((("workspace", "user"), True), (("workspace", "role"), False))


class MemberDeparture(WorkspaceScoped):
    """When the user last left the workspace (removed, or leaving): their access tokens created
    before it never act in the workspace again, even once they have joined it anew (a new
    membership carries it as its ``tokens_since``)."""
    user = ForeignKeyField(User, on_delete="CASCADE", backref="+")
    departed_at = DateTimeField()

    class Meta:
        primary_key = CompositeKey("workspace", "user")


class AccessToken(BaseModel):
    id = CharField(primary_key=True, default=new_id)
    user = ForeignKeyField(User, on_delete="CASCADE", backref="access_tokens")
    # SHA-256 of the secret; the secret itself is shown once and never stored.
    token_hash = CharField(unique=True)
    name = TextField(null=True)
    created_at = DateTimeField(default=utcnow)
    expires_at = DateTimeField(null=True)
    last_used_at = DateTimeField(null=True)


class ApiKey(WorkspaceScoped):
    id = CharField(primary_key=True, default=new_id)
    # The user the key acts for; its permissions can never exceed this user's role.
    user = ForeignKeyField(User, on_delete="CASCADE", backref="api_keys")
    name = TextField()
    # SHA-256 of the secret; the secret is returned once, by create, and never stored.
    key_hash = CharField(unique=True)
    is_active = BooleanField(default=True)
    created_at = DateTimeField(default=utcnow)
    last_used_at = DateTimeField(null=True)
    # Set once at creation; nothing updates it.
    expires_at = DateTimeField()
    requests_per_minute = IntegerField(null=True)
    requests_per_day = IntegerField(null=True)
    # Frozen at creation; effective permissions are these intersected with the user's current role.
    permissions = FrozenListField()

    class Meta:
        # The list's order, newest first, with the id to break ties: a page reads just its rows.
        indexes = ((("workspace", "created_at", "id"), False),)


class WorkspaceRole(WorkspaceScoped):
    id = CharField(primary_key=True, default=new_id)
    name = CharField()
    description = TextField(null=True)
    permissions = FrozenListField()
    created_by = CharField()
    created_at = DateTimeField(default=utcnow)
    updated_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = ((("workspace", "name"), True),)


class Invitation(WorkspaceScoped):
    id = CharField(primary_key=True, default=new_id)
    email = CharField()
    role = CharField()
    token_hash = CharField(unique=True)
    invited_by = CharField()
    created_at = DateTimeField(default=utcnow)
    expires_at = DateTimeField()
    accepted_at = DateTimeField(null=True)
    accepted_by = CharField(null=True)
    revoked_at = DateTimeField(null=True)

    class Meta:
        indexes = ((("workspace", "created_at", "id"), False),)


class RateLimitUsage(BaseModel):
    credential_id = CharField(primary_key=True)
    minute = BigIntegerField()  # epoch seconds // 60 of the window minute_hits counts
    minute_hits = IntegerField()
    day = BigIntegerField()  # epoch seconds // 86400
    day_hits = IntegerField()


class UserPassword(BaseModel):
    """A user's password, as its argon2id hash (models.identity.passwords); a user without a row
    has none and signs in only with tokens."""
    user = ForeignKeyField(User, primary_key=True, on_delete="CASCADE", backref="+")
    password_hash = TextField()
    updated_at = DateTimeField(default=utcnow)


class UserMfa(BaseModel):
    """A user's TOTP second factor (models.identity.mfa): pending until a first code confirms it."""
    user = ForeignKeyField(User, primary_key=True, on_delete="CASCADE", backref="+")
    # Encrypted at rest (models.kernel.encryption): a code is checked against the secret itself.
    secret = TextField()
    created_at = DateTimeField(default=utcnow)
    confirmed_at = DateTimeField(null=True)
    # The time step of the last code accepted: a code of that step or an earlier one is a replay.
    last_step = BigIntegerField(null=True)


class MfaRecoveryCode(BaseModel):
    id = CharField(primary_key=True, default=new_id)
    # Indexed by the unique (user, code_hash) below.
    user = ForeignKeyField(User, on_delete="CASCADE", backref="+", index=False)
    # SHA-256 of the code; the code is shown once, when the second factor is confirmed.
    code_hash = CharField()
    used_at = DateTimeField(null=True)

    class Meta:
        indexes = ((("user", "code_hash"), True),)


class SignInChallenge(BaseModel):
    """What a sign-in whose password was right hands back when a second step remains: ``mfa`` (a
    code of the user's second factor) or ``enrol`` (enrolling one, which a workspace requires)."""
    id = CharField(primary_key=True, default=new_id)
    user = ForeignKeyField(User, on_delete="CASCADE", backref="+")
    purpose = CharField()
    # SHA-256 of the challenge, a secret shown once.
    token_hash = CharField(unique=True)
    created_at = DateTimeField(default=utcnow)
    expires_at = DateTimeField()
    used_at = DateTimeField(null=True)


class SignInThrottle(BaseModel):
    """Failed sign-in steps of one email (models.identity.sign_in), in a window that starts at its
    first failure: keyed by the email as typed in, normalised, so that an unknown email is counted
    like a known one."""
    email = CharField(primary_key=True)
    failures = IntegerField()
    window_started_at = DateTimeField()
