"""Calls: end-of-call-reports as the call runtime posts them, calls recorded as the webhook records
them, and the structured-data fields extracted from them."""
from __future__ import annotations

import uuid
from datetime import timedelta

from models.kernel.db import session, utcnow
from tests.support.factories.identity import Actor


def report(actor: Actor, **fields) -> dict:
    """An end-of-call-report of the actor's workspace as the call runtime posts it (a new callId,
    started a minute ago, 42 s long or ``durationMs``, ending that long after it started); ``fields``
    replace or add wire fields (None removes one)."""
    started = utcnow().replace(microsecond=0) - timedelta(minutes=1)
    duration_ms = 42_000 if fields.get("durationMs") is None else fields["durationMs"]
    body = {"type": "end-of-call-report", "callId": str(uuid.uuid4()), "workspaceId": actor.workspace_id,
            "durationMs": 42_000, "status": "completed", "callEndReasonCategory": "customer",
            "customer": "+14155550123", "startedAt": started.isoformat() + "Z",
            "endedAt": (started + timedelta(milliseconds=duration_ms)).isoformat() + "Z",
            "recordingUrl": "https://recordings.example.com/call.wav", "timestamp": utcnow().isoformat() + "Z",
            "summary": "The customer asked about an invoice.", "endedReason": "customer-ended-call",
            "transcript": "AI: Hello.\nUser: Hi, about my invoice.", "callType": "inbound"}
    body.update(fields)
    return {key: value for key, value in body.items() if value is not None}


def call(actor: Actor, **fields) -> str:
    """A call of the actor's workspace, recorded as the webhook records one; its id. ``fields`` are
    the domain Report's (started_at as naive UTC, agent_id, call_type, tags, structured_data...)."""
    from models.call_recorded import record
    from models.calls.calls import Report
    started = fields.pop("started_at", None) or utcnow() - timedelta(minutes=1)
    duration_ms = fields.pop("duration_ms", 42_000.0)
    values = dict(call_id=str(uuid.uuid4()), workspace_id=actor.workspace_id, started_at=started,
                  ended_at=started + timedelta(milliseconds=duration_ms), duration_ms=duration_ms, agent_id=None,
                  call_type="inbound", status="completed", call_end_reason_category="customer",
                  ended_reason="customer-ended-call", customer="+14155550123", recording_url=None,
                  summary="A call.", transcript="AI: Hello.", sent_at=None, structured_data={}, tags=[], raw={})
    values.update(fields)
    with session():
        return record(Report(**values)).call_id


def insight(actor: Actor, name: str = "score", type: str = "number", enum_values: list | None = None,
            agents: list[str] = ()) -> int:
    """A structured-data field of the actor's workspace, assigned to ``agents`` besides their
    other fields; its id."""
    from models.calls.insights import agent_fields, create_field, set_agent_fields
    with session():
        field = create_field(workspace_id=actor.workspace_id, name=name, type=type, enum_values=enum_values)
        for agent_id in agents:
            held = [f.id for f in agent_fields(workspace_id=actor.workspace_id, agent_id=agent_id)]
            set_agent_fields(workspace_id=actor.workspace_id, agent_id=agent_id, field_ids=held + [field.id])
    return field.id
