"""Control requests to live calls: transferLiveCall, resumeLiveCall, sendLiveCallMessage,
listLiveCallControls, getLiveCallControl, claimLiveCallControls, acknowledgeLiveCallControl."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import iso
from models.calls.export import customer_number
from models.live_calls import controls
from models.live_calls.controls import ControlRecord


def control_shape(record: ControlRecord, permissions=None) -> dict:
    """The request on the wire; a transfer's number masked unless ``permissions`` (the reader's)
    hold calls:pii. None: the runtime's own reading (a claim, an acknowledgement), in full."""
    request = record.request
    destination = request.get("destination")
    if permissions is not None and destination and destination.get("type") == "number":
        request = {**request, "destination": {**destination,
                                              "number": customer_number(destination["number"], permissions)}}
    return {"id": record.id, "callId": record.call_id, "workspaceId": record.workspace_id, "kind": record.kind,
            "request": request, "state": record.state, "error": record.error, "createdBy": record.created_by,
            "createdAt": iso(record.created_at), "deliveredAt": iso(record.delivered_at),
            "completedAt": iso(record.completed_at), "updatedAt": iso(record.updated_at)}


def _requested(principal, workspace_id: str, call_id: str, kind: str, request: dict, message: str):
    record = controls.request_control(principal, workspace_id=workspace_id, call_id=call_id, kind=kind,
                                      request=request)
    return ok({"control": control_shape(record, principal.permissions)}, message)


def transfer_live_call(callId: str, workspaceId: str, body: dict, principal):
    request = controls.transfer_request(workspaceId, body["destination"])
    return _requested(principal, workspaceId, callId, "transfer", request, "Transfer requested")


def resume_live_call(callId: str, workspaceId: str, principal):
    return _requested(principal, workspaceId, callId, "resume", {}, "Resume requested")


def send_live_call_message(callId: str, workspaceId: str, body: dict, principal):
    request = controls.message_request(body.get("role"), body["content"])
    return _requested(principal, workspaceId, callId, "message", request, "Message requested")


def list_live_call_controls(callId: str, workspaceId: str, principal, limit: int = 20, offset: int = 0,
                            state: str | None = None):
    page = controls.list_controls(workspace_id=workspaceId, call_id=callId, limit=limit, offset=offset, state=state)
    return ok({"controls": [control_shape(record, principal.permissions) for record in page.items],
               "pagination": page.pagination()})


def get_live_call_control(callId: str, controlId: str, workspaceId: str, principal):
    record = controls.get_control(workspace_id=workspaceId, call_id=callId, control_id=controlId)
    return ok({"control": control_shape(record, principal.permissions)})


def claim_live_call_controls(workspaceId: str, body: dict):
    claimed = controls.claim(workspace_id=workspaceId, count=body.get("count", 10))
    return ok({"controls": [control_shape(record) for record in claimed]},
              f"{len(claimed)} control request{'' if len(claimed) == 1 else 's'} claimed")


def acknowledge_live_call_control(callId: str, controlId: str, workspaceId: str, body: dict):
    record, changed = controls.acknowledge(workspace_id=workspaceId, call_id=callId, control_id=controlId,
                                           state=body["state"], error=body.get("error"))
    return ok({"control": control_shape(record), "changed": changed},
              f"Control request {record.state}" if changed else f"The control request was {record.state} already")
