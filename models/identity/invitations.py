"""Invitations: an email, a role, and a one-time token that makes the person a member.

The token is shown once (when the invitation is made or resent) and stored as its SHA-256, like
every other secret of the service; it expires after ``VALID_FOR``. Accepting it needs no other
credential: it creates the user if the email is new, the membership, and an access token.
An invitation is accepted at most once, even when two acceptances race: the one ``UPDATE`` that
marks it accepted decides. Resending gives a new token and a new expiry; the old token stops.
"""
from __future__ import annotations

import functools
from datetime import datetime, timedelta
from typing import NamedTuple

from peewee import IntegrityError

from models.identity import passwords
from models.identity.members import add, require_email
from models.identity.principal import Principal
from models.identity.roles import granted_by, require_within, resolve
from models.identity.tables import AccessToken, Invitation, Membership, User, UserPassword
from models.kernel.db import database, utcnow
from models.kernel.errors import Conflict, DomainError, Forbidden, InvalidInput, NotFound
from models.kernel.pagination import Page, PageQuery, workspace_list
from models.kernel.scoping import Workspace
from models.kernel.secrets import ACCESS_TOKEN_PREFIX, INVITATION_PREFIX, digest, matches, new_secret

VALID_FOR = timedelta(days=7)
ACCESS_TOKEN_VALID_FOR = timedelta(days=30)
MAX_PENDING_PER_WORKSPACE = 500
STATUSES = ("pending", "accepted", "revoked", "expired")


class Gone(DomainError):
    status = 410
    code = "gone"


class InvitationRecord(NamedTuple):
    id: str
    workspace_id: str
    email: str
    role: str
    invited_by: str
    created_at: datetime
    expires_at: datetime
    accepted_at: datetime | None
    accepted_by: str | None
    revoked_at: datetime | None

    def status(self, now: datetime) -> str:
        if self.accepted_at is not None:
            return "accepted"
        if self.revoked_at is not None:
            return "revoked"
        return "expired" if self.expires_at <= now else "pending"


class Accepted(NamedTuple):
    workspace_id: str
    user_id: str
    email: str
    role: str
    created_user: bool
    token_id: str
    token: str
    token_expires_at: datetime


_I = Invitation
_COLUMNS = (_I.id, _I.workspace, _I.email, _I.role, _I.invited_by, _I.created_at, _I.expires_at, _I.accepted_at,
            _I.accepted_by, _I.revoked_at)
_OPEN = _I.accepted_at.is_null() & _I.revoked_at.is_null()
# What each status is, as of ``now`` (InvitationRecord.status says the same of one record).
_STATUS = {
    "pending": lambda now: _OPEN & (_I.expires_at > now),
    "expired": lambda now: _OPEN & (_I.expires_at <= now),
    "accepted": lambda now: _I.accepted_at.is_null(False),
    "revoked": lambda now: _I.accepted_at.is_null() & _I.revoked_at.is_null(False),
}


@functools.cache
def _page(status: str | None) -> PageQuery:
    """Newest first, of one status or all, compiled once per status."""
    return workspace_list(_I, _COLUMNS, order_by=(_I.created_at.desc(), _I.id.desc()),
                          names=("now",) if status else (),
                          where=(lambda params: [_STATUS[status](params["now"])]) if status else None)


def _pending(workspace_id: str, now: datetime):
    return _I.in_workspace(workspace_id).where(_I.accepted_at.is_null() & _I.revoked_at.is_null()
                                               & (_I.expires_at > now))


def create(principal: Principal, *, workspace_id: str, email: str, role: str,
           now: datetime | None = None) -> tuple[InvitationRecord, str]:
    """The invitation and its token, in clear this once."""
    now = now or utcnow()
    email = require_email(email)
    with database.atomic():
        Workspace.update(id=Workspace.id).where(Workspace.id == workspace_id).execute()  # orders concurrent invites
        stored, grants = resolve(workspace_id, role)
        require_within(principal, grants, f"Inviting with the role {role}")
        member = (Membership.select().join(User, on=(User.id == Membership.user))
                  .where((Membership.workspace == workspace_id) & (User.email == email)).exists())
        if member:
            raise Conflict(f"{email} is already a member of this workspace.")
        if _pending(workspace_id, now).where(_I.email == email).exists():
            raise Conflict(f"{email} already has a pending invitation; resend or revoke it.")
        if _pending(workspace_id, now).count() >= MAX_PENDING_PER_WORKSPACE:
            raise Conflict(f"A workspace has at most {MAX_PENDING_PER_WORKSPACE} pending invitations.")
        token = new_secret(INVITATION_PREFIX)
        row = _I.create(workspace=workspace_id, email=email, role=stored, token_hash=digest(token),
                        invited_by=principal.user_id, created_at=now, expires_at=now + VALID_FOR)
    return get(workspace_id=workspace_id, invitation_id=row.id), token


def get(*, workspace_id: str, invitation_id: str) -> InvitationRecord:
    row = _I.in_workspace(workspace_id, *_COLUMNS).where(_I.id == invitation_id).tuples().first()
    if row is None:
        raise NotFound(f"No invitation {invitation_id} in this workspace.")
    return InvitationRecord(*row)


def list_invitations(*, workspace_id: str, limit: int, offset: int, status: str | None = None,
                     now: datetime | None = None) -> Page[InvitationRecord]:
    if status is not None and status not in _STATUS:
        raise InvalidInput(f"status must be one of {', '.join(_STATUS)}.")
    params = {"now": _I.expires_at.db_value(now or utcnow())} if status else {}
    return _page(status).page(InvitationRecord, workspace_id=workspace_id, limit=limit, offset=offset, **params)


def resend(principal: Principal, *, workspace_id: str, invitation_id: str,
           now: datetime | None = None) -> tuple[InvitationRecord, str]:
    """A new token and a new expiry for an invitation not accepted or revoked; the old token stops."""
    now = now or utcnow()
    with database.atomic():
        invitation = get(workspace_id=workspace_id, invitation_id=invitation_id)
        status = invitation.status(now)
        if status in ("accepted", "revoked"):
            raise Conflict(f"This invitation was {status}; it cannot be resent. Invite again instead.")
        require_within(principal, _grants(workspace_id, invitation.role), "Resending this invitation")
        token = new_secret(INVITATION_PREFIX)
        changed = _I.update(token_hash=digest(token), expires_at=now + VALID_FOR).where(
            (_I.id == invitation_id) & _I.accepted_at.is_null() & _I.revoked_at.is_null()).execute()
        if not changed:
            raise Conflict("This invitation was accepted or revoked meanwhile.")
    return get(workspace_id=workspace_id, invitation_id=invitation_id), token


def revoke(*, workspace_id: str, invitation_id: str, now: datetime | None = None) -> InvitationRecord:
    now = now or utcnow()
    with database.atomic():
        invitation = get(workspace_id=workspace_id, invitation_id=invitation_id)
        if invitation.accepted_at is not None:
            raise Conflict("This invitation was accepted; remove the member instead.")
        if invitation.revoked_at is None:
            _I.update(revoked_at=now).where((_I.id == invitation_id) & _I.accepted_at.is_null()).execute()
    return get(workspace_id=workspace_id, invitation_id=invitation_id)


def _grants(workspace_id: str, role: str):
    return granted_by(workspace_id, role)


def accept(token: str, *, display_name: str | None = None, password: str | None = None,
           now: datetime | None = None) -> Accepted:
    """Membership and an access token for the invitation's email. 400 for a token that is not one;
    410 (Gone) for one accepted, revoked or expired, saying which.

    ``password``, optional, becomes the password of the user the acceptance creates (to sign in with
    later: models.identity.sign_in). For an email that has a user already it is refused (409, nothing
    accepted): whoever holds the token (the inviter saw it) must not set the password of an existing
    account."""
    now = now or utcnow()
    if not token.startswith(INVITATION_PREFIX):
        raise InvalidInput("token is not an invitation token of this service (they begin with vai_).")
    # Hashed before the transaction: tens of milliseconds that no lock need wait on.
    password_hash = passwords.hash_password(passwords.require_valid(password)) if password is not None else None
    with database.atomic():
        row = _I.select().where(_I.token_hash == digest(token)).first()
        if row is None or not matches(token, row.token_hash):
            raise InvalidInput("token is not valid: no invitation has it (a resent invitation's earlier token "
                               "stops working).")
        record = get(workspace_id=row.workspace_id, invitation_id=row.id)
        status = record.status(now)
        if status != "pending":
            raise Gone({"accepted": "This invitation was accepted already; sign in with the access token it gave.",
                        "revoked": "This invitation was revoked; ask for a new one.",
                        "expired": "This invitation has expired; ask for it to be resent."}[status])
        user, created = _user(record.email, display_name)
        if not user.is_active:
            raise Forbidden("The user with this email is deactivated.")
        if password_hash is not None:
            if not created:
                raise Conflict("password is only set for a new user: this email has an account already, "
                               "whose password an invitation does not change. Accept without it.")
            UserPassword.create(user=user.id, password_hash=password_hash, updated_at=now)
        # Marks it accepted only if it still is pending: of two acceptances at once, one wins.
        if not _I.update(accepted_at=now, accepted_by=user.id).where(
                (_I.id == row.id) & _I.accepted_at.is_null() & _I.revoked_at.is_null()).execute():
            raise Gone("This invitation was accepted or revoked meanwhile.")
        add(workspace_id=record.workspace_id, user_id=user.id, role=record.role)
        role = Membership.select(Membership.role).where((Membership.workspace == record.workspace_id)
                                                        & (Membership.user == user.id)).scalar()
        secret = new_secret(ACCESS_TOKEN_PREFIX)
        access = AccessToken.create(user=user.id, token_hash=digest(secret), name="invitation", created_at=now,
                                    expires_at=now + ACCESS_TOKEN_VALID_FOR)
    return Accepted(record.workspace_id, user.id, user.email, role, created, access.id, secret, access.expires_at)


def _user(email: str, display_name: str | None) -> tuple[User, bool]:
    found = User.get_or_none(User.email == email)
    if found is not None:
        return found, False
    try:
        with database.atomic():  # a savepoint: another acceptance may create the same user meanwhile
            return User.create(email=email, display_name=display_name), True
    except IntegrityError:
        return User.get(User.email == email), False
