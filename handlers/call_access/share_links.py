"""Share links of calls: createShareLink, listShareLinks, revokeShareLink, and what a link shows
without a credential: getSharedCall, getSharedCallRecording (the file, in byte ranges, from the
descriptor opened before the answer, as getCallRecording serves it)."""
from __future__ import annotations

from api.contract import BASE_PATH
from api.envelope import ok
from api.offload import in_session
from handlers.calls.call_recordings import recording_answer
from handlers.wire import deleted, iso
from models.call_access import share_links
from models.call_access.share_links import SHARED_PATH, ShareLinkRecord
from models.kernel.db import utcnow


def share_link_shape(record: ShareLinkRecord) -> dict:
    return {"id": record.id, "workspaceId": record.workspace_id, "callId": record.call_id,
            "includeRecording": record.include_recording, "createdBy": record.created_by,
            "createdAt": iso(record.created_at), "expiresAt": iso(record.expires_at),
            "revokedAt": iso(record.revoked_at), "status": record.status(utcnow())}


def create_share_link(workspaceId: str, callId: str, body: dict, principal):
    record, token = share_links.create(principal, workspace_id=workspaceId, call_id=callId,
                                       expires_in_hours=body.get("expiresInHours", share_links.DEFAULT_HOURS),
                                       include_recording=body.get("includeRecording", False))
    return ok({"shareLink": share_link_shape(record), "token": token, "path": f"{BASE_PATH}{SHARED_PATH}{token}"},
              "Share link made; its token is shown this once")


def list_share_links(workspaceId: str, callId: str, limit: int = 20, offset: int = 0):
    page = share_links.list_links(workspace_id=workspaceId, call_id=callId, limit=limit, offset=offset)
    return ok({"shareLinks": [share_link_shape(s) for s in page.items], "pagination": page.pagination()})


def revoke_share_link(workspaceId: str, callId: str, shareLinkId: str):
    record = share_links.revoke(workspace_id=workspaceId, call_id=callId, link_id=shareLinkId)
    return deleted(record.id, "Share link revoked", shareLink=share_link_shape(record))


def get_shared_call(token: str):
    shared = share_links.shared_call(token)
    return ok({"call": {"agentName": shared.agent_name, "customer": shared.customer,
                        "startedAt": iso(shared.started_at), "endedAt": iso(shared.ended_at),
                        "durationMs": shared.duration_ms, "status": shared.status, "summary": shared.summary,
                        "transcript": shared.transcript, "recording": shared.recording}})


async def get_shared_call_recording(token: str):
    recording = await in_session(share_links.open_shared_recording, token=token)
    return recording_answer(recording)
