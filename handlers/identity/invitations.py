"""Invitations: createInvitation, listInvitations, resendInvitation, revokeInvitation, acceptInvitation."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import deleted, iso
from models.identity import invitations
from models.identity.invitations import InvitationRecord
from models.kernel.db import utcnow


def invitation_shape(record: InvitationRecord) -> dict:
    return {"id": record.id, "workspaceId": record.workspace_id, "email": record.email, "role": record.role,
            "status": record.status(utcnow()), "invitedBy": record.invited_by, "createdAt": iso(record.created_at),
            "expiresAt": iso(record.expires_at), "acceptedAt": iso(record.accepted_at),
            "acceptedBy": record.accepted_by, "revokedAt": iso(record.revoked_at)}


def create_invitation(workspaceId: str, body: dict, principal):
    record, token = invitations.create(principal, workspace_id=workspaceId, email=body["email"], role=body["role"])
    return ok({"invitation": invitation_shape(record), "token": token},
              "Invitation created; its token is shown this once")


def list_invitations(workspaceId: str, limit: int = 20, offset: int = 0, status: str | None = None):
    page = invitations.list_invitations(workspace_id=workspaceId, limit=limit, offset=offset, status=status)
    return ok({"invitations": [invitation_shape(i) for i in page.items], "pagination": page.pagination()})


def resend_invitation(workspaceId: str, invitationId: str, principal):
    record, token = invitations.resend(principal, workspace_id=workspaceId, invitation_id=invitationId)
    return ok({"invitation": invitation_shape(record), "token": token},
              "Invitation resent with a new token, shown this once; the earlier one no longer works")


def revoke_invitation(workspaceId: str, invitationId: str):
    record = invitations.revoke(workspace_id=workspaceId, invitation_id=invitationId)
    return deleted(record.id, "Invitation revoked", invitation=invitation_shape(record))


def accept_invitation(body: dict):
    accepted = invitations.accept(body["token"], display_name=body.get("displayName"), password=body.get("password"))
    return ok({"workspaceId": accepted.workspace_id, "role": accepted.role,
               "user": {"id": accepted.user_id, "email": accepted.email, "created": accepted.created_user},
               "accessToken": {"id": accepted.token_id, "token": accepted.token,
                               "expiresAt": iso(accepted.token_expires_at)}},
              "Invitation accepted; the access token is shown this once")
