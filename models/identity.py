"""Workspaces, the people in them, their roles, and the access tokens they sign in with."""
from __future__ import annotations

import uuid
from datetime import timedelta

from peewee import BigIntegerField, BooleanField, CharField, DateTimeField, ForeignKeyField, IntegerField, TextField

from .db import BaseModel, JSONField, database, utcnow
from .errors import Conflict, InvalidInput
from .permissions import ROLES
from .secrets import ACCESS_TOKEN_PREFIX, digest, new_secret


def new_id() -> str:
    return str(uuid.uuid4())


class Workspace(BaseModel):
    id = CharField(primary_key=True, default=new_id)
    name = TextField()
    created_at = DateTimeField(default=utcnow)
    # Time zone, default language, webhook and speech defaults (models.workspaces).
    settings = JSONField(default=dict)
    # Calls older than this many days are purged (models.retention); None keeps them.
    data_retention_days = IntegerField(null=True)
    # The running sum of the workspace's credits ledger (models.credits).
    credit_balance = BigIntegerField(default=0)
    updated_at = DateTimeField(null=True)


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
    # The name of a built-in role (see permissions.ROLES) or the id of a custom role (models.roles).
    role = CharField()
    created_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = ((("workspace", "user"), True), (("workspace", "role"), False))


class AccessToken(BaseModel):
    id = CharField(primary_key=True, default=new_id)
    user = ForeignKeyField(User, on_delete="CASCADE", backref="access_tokens")
    # SHA-256 of the secret; the secret itself is shown once and never stored.
    token_hash = CharField(unique=True)
    name = TextField(null=True)
    created_at = DateTimeField(default=utcnow)
    expires_at = DateTimeField(null=True)
    last_used_at = DateTimeField(null=True)


def bootstrap_workspace(*, workspace_name: str, email: str, display_name: str | None = None) -> tuple[Workspace, User]:
    """Create a workspace and make the user (created if new) its owner."""
    if not workspace_name.strip():
        raise InvalidInput("workspace name must not be empty")
    email = _normalized_email(email)
    with database.atomic():
        user = User.get_or_none(User.email == email)
        if user is None:
            user = User.create(email=email, display_name=display_name)
        workspace = Workspace.create(name=workspace_name.strip())
        Membership.create(workspace=workspace, user=user, role="owner")
    return workspace, user


def add_member(*, workspace_id: str, email: str, role: str, display_name: str | None = None) -> User:
    if role not in ROLES:
        raise InvalidInput(f"role must be one of {', '.join(ROLES)}")
    email = _normalized_email(email)
    with database.atomic():
        user = User.get_or_none(User.email == email) or User.create(email=email, display_name=display_name)
        if Membership.get_or_none(workspace=workspace_id, user=user) is not None:
            raise Conflict(f"{email} is already a member of this workspace")
        Membership.create(workspace=workspace_id, user=user, role=role)
    return user


def issue_access_token(*, email: str, valid_for: timedelta | None = timedelta(days=30)) -> tuple[AccessToken, str]:
    """A new access token for an existing user; returns the row and the secret (shown once)."""
    user = User.get_or_none(User.email == _normalized_email(email))
    if user is None:
        raise InvalidInput(f"no user with email {email}")
    secret = new_secret(ACCESS_TOKEN_PREFIX)
    now = utcnow()
    token = AccessToken.create(
        user=user, token_hash=digest(secret), created_at=now,
        expires_at=None if valid_for is None else now + valid_for,
    )
    return token, secret


def _normalized_email(email: str) -> str:
    email = email.strip().lower()
    if "@" not in email or email.startswith("@") or email.endswith("@"):
        raise InvalidInput(f"email {email!r} is not an email address")
    return email
