"""Inbound routing: resolveInboundRoute."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import naive_utc
from models.telephony import routing


def resolve_inbound_route(workspaceId: str, number: str, at: str | None = None):
    resolution = routing.resolve(workspace_id=workspaceId, number=number, at=naive_utc(at, "at"))
    target = resolution.target
    return ok({"number": resolution.number, "phoneNumberId": resolution.phone_number_id,
               "withinHours": resolution.within_hours, "scheduleId": resolution.schedule_id,
               "target": {"type": target.type, "id": target.id, "name": target.name, "versionId": target.version_id,
                          "versionNumber": target.version_number, "config": target.config}},
              f"{target.type.capitalize()} {target.name} answers {resolution.number}")
