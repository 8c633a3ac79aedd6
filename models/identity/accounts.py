"""Workspaces, the people in them, their roles, and the access tokens they sign in with."""
from __future__ import annotations

from datetime import timedelta

from models.identity.members import returning_since
from models.identity.permissions import ROLES
from models.identity.tables import AccessToken, Membership, User
from models.kernel.db import database, utcnow
from models.kernel.errors import Conflict, InvalidInput
from models.kernel.scoping import Workspace
from models.kernel.secrets import ACCESS_TOKEN_PREFIX, digest, new_secret


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
        Membership.create(workspace=workspace_id, user=user, role=role,
                          tokens_since=returning_since(workspace_id=workspace_id, user_id=user.id))
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
