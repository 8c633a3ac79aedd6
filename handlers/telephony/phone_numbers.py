"""The workspace's phone numbers: createPhoneNumber, listPhoneNumbers, getPhoneNumber,
updatePhoneNumber, deletePhoneNumber, setPhoneNumberRouting, importPhoneNumbers."""
from __future__ import annotations


from api.audit_trail import note
from api.envelope import ok
from handlers.wire import deleted, iso
from models.kernel.errors import Forbidden, InvalidInput
from models.telephony import numbers
from models.telephony.numbers import ImportResult, NumberRecord

ROUTING = "inbound:write"


def _target(kind: str | None, target_id: str | None, of: str) -> str | None:
    return target_id if kind == of else None


def number_shape(record: NumberRecord) -> dict:
    kind, after = record.inbound_target_type, record.after_hours_target_type
    return {"id": record.id, "workspaceId": record.workspace_id, "number": record.number, "label": record.label,
            "provider": record.provider, "capabilities": {"inbound": record.inbound, "outbound": record.outbound},
            "routing": {"agentId": _target(kind, record.inbound_target_id, "agent"),
                        "workflowId": _target(kind, record.inbound_target_id, "workflow"),
                        "scheduleId": record.schedule_id,
                        "afterHours": {"agentId": _target(after, record.after_hours_target_id, "agent"),
                                       "workflowId": _target(after, record.after_hours_target_id, "workflow")}},
            "createdBy": record.created_by, "createdAt": iso(record.created_at), "updatedAt": iso(record.updated_at)}


def create_phone_number(workspaceId: str, body: dict, principal):
    if (body.get("inboundAgentId") or body.get("inboundWorkflowId")) and ROUTING not in principal.permissions:
        # Else phone-numbers:write alone would choose what answers a number.
        raise Forbidden(f"Naming what answers the number needs the permission {ROUTING}, which the caller "
                        "does not have; add the number without it.")
    capabilities = body.get("capabilities") or {}
    record = numbers.create(
        principal, workspace_id=workspaceId, number=body["number"], region=body.get("region"),
        label_text=body.get("label"), provider_name=body.get("provider"),
        inbound=capabilities.get("inbound", True), outbound=capabilities.get("outbound", True),
        inbound_agent_id=body.get("inboundAgentId"), inbound_workflow_id=body.get("inboundWorkflowId"))
    return ok({"phoneNumber": number_shape(record)}, "Phone number added")


def list_phone_numbers(workspaceId: str, limit: int = 20, offset: int = 0, q: str | None = None,
                       capability: str | None = None):
    page = numbers.list_numbers(workspace_id=workspaceId, limit=limit, offset=offset, q=q, capability=capability)
    return ok({"phoneNumbers": [number_shape(n) for n in page.items], "pagination": page.pagination()})


def get_phone_number(workspaceId: str, phoneNumberId: str):
    return ok({"phoneNumber": number_shape(numbers.get(workspace_id=workspaceId, number_id=phoneNumberId))})


def update_phone_number(workspaceId: str, phoneNumberId: str, body: dict):
    changes = {name: body[field] for field, name in (("label", "label_text"), ("provider", "provider_name"))
               if field in body}
    capabilities = body.get("capabilities") or {}
    record = numbers.update(workspace_id=workspaceId, number_id=phoneNumberId, inbound=capabilities.get("inbound"),
                            outbound=capabilities.get("outbound"), **changes)
    return ok({"phoneNumber": number_shape(record)}, "Phone number updated")


def delete_phone_number(workspaceId: str, phoneNumberId: str):
    numbers.delete(workspace_id=workspaceId, number_id=phoneNumberId)
    return deleted(phoneNumberId, "Phone number deleted")


def set_phone_number_routing(workspaceId: str, phoneNumberId: str, body: dict):
    routing = numbers.routing_of(body.get("agentId"), body.get("workflowId"), body.get("scheduleId"),
                                 body.get("afterHoursAgentId"), body.get("afterHoursWorkflowId"))
    record = numbers.set_routing(workspace_id=workspaceId, number_id=phoneNumberId, routing=routing)
    return ok({"phoneNumber": number_shape(record)}, "Routing set")


def import_result_shape(result: ImportResult) -> dict:
    return {"imported": len(result.imported),
            "failed": [{"line": f.line, "number": f.number, "reason": f.reason} for f in result.failed],
            "numbers": [{"line": i.line, "id": i.id, "number": i.number} for i in result.imported]}


def import_phone_numbers(workspaceId: str, principal, body=None, region: str | None = None):
    if not isinstance(body, bytes) or not body:
        raise InvalidInput("The request body must be a CSV file whose first line names the columns, such as "
                           f"{','.join(numbers.IMPORT_COLUMNS)}.")
    result = numbers.import_csv(principal, workspace_id=workspaceId, body=body, region=region)
    note(imported=len(result.imported), failed=len(result.failed))
    return ok(import_result_shape(result), f"{len(result.imported)} number(s) imported, {len(result.failed)} row(s) "
                                           "failed")
