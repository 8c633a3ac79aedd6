"""Live calls: registerLiveCall, listLiveCalls, moveLiveCallStatus, getLiveCallStatus."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import iso, naive_utc
from models.calls.export import customer_number
from models.identity.principal import Principal
from models.live_calls import calls
from models.live_calls.calls import LiveCallRecord, MoveRecord


def live_call_shape(record: LiveCallRecord, principal: Principal) -> dict:
    """The call on the wire; the customer's number (the caller of an inbound call, the number an
    outbound one dials) masked unless the caller holds calls:pii."""
    inbound = record.direction == "inbound"
    return {"id": record.id, "callId": record.call_id, "workspaceId": record.workspace_id,
            "direction": record.direction, "entityType": record.entity_type, "entityId": record.entity_id,
            "versionId": record.version_id,
            "from": customer_number(record.from_number, principal.permissions) if inbound else record.from_number,
            "to": record.to_number if inbound else customer_number(record.to_number, principal.permissions),
            "campaignId": record.campaign_id, "contactId": record.contact_id, "status": record.status,
            "statusReason": record.status_reason, "statusAt": iso(record.status_at),
            "registeredAt": iso(record.registered_at), "ringingAt": iso(record.ringing_at),
            "answeredAt": iso(record.answered_at), "endedAt": iso(record.ended_at), "updatedAt": iso(record.updated_at),
            "recordedCallId": record.recorded_call_id}


def move_shape(move: MoveRecord) -> dict:
    return {"from": move.from_status, "to": move.to_status, "at": iso(move.at), "reason": move.reason,
            "recordedAt": iso(move.recorded_at)}


def register_live_call(workspaceId: str, body: dict, principal):
    registration = calls.check_registration(
        workspaceId, direction=body["direction"], entity_type=body["entityType"], entity_id=body["entityId"],
        version_id=body["versionId"], from_number=body["from"], to_number=body["to"],
        campaign_id=body.get("campaignId"), contact_id=body.get("contactId"))
    record, created = calls.register(workspace_id=workspaceId, call_id=body["callId"], registration=registration)
    return ok({"call": live_call_shape(record, principal), "created": created},
              "Call registered" if created else "The call was registered before")


def list_live_calls(workspaceId: str, principal, limit: int = 20, offset: int = 0, status: str | None = None,
                    agentId: str | None = None):
    page = calls.list_live(workspace_id=workspaceId, limit=limit, offset=offset, status=status, agent_id=agentId)
    return ok({"calls": [live_call_shape(record, principal) for record in page.items], "pagination": page.pagination()})


def move_live_call_status(callId: str, workspaceId: str, body: dict, principal):
    record, moved = calls.move(workspace_id=workspaceId, call_id=callId, status=body["status"],
                               at=naive_utc(body.get("at"), "at"), reason=body.get("reason"))
    return ok({"call": live_call_shape(record, principal), "moved": moved},
              f"The call is {record.status}" if moved else f"The call was {record.status} already")


def get_live_call_status(callId: str, workspaceId: str, principal):
    record, moves = calls.get_status(workspace_id=workspaceId, call_id=callId)
    return ok({"call": live_call_shape(record, principal), "history": [move_shape(move) for move in moves]})
