"""What a recorded call triggers: the one list.

The end-of-call-report ingest (``models.calls.calls.ingest``) stores a new call, its count and its
tags, then calls each subscriber below with the call's report, in order, in the same transaction:
none of their effects exists without the call, nor the call without them, and a redelivered
report triggers nothing. The calls package imports none of its subscribers; what a new kind of
work needs of each recorded call (feedback, simulations) is added here, as campaign contacts were.
"""
from __future__ import annotations

from models.billing import credits
from models.campaigns import dialing
from models.calls import imports, insights
from models.calls.calls import Ingested, Report, ingest, outbound_payload
from models.identity import workspaces
from models.kernel.db import after_commit
from models.live_calls import calls as live_calls
from models.speech.customisation import mask_reported_transcript, masked_text
from models.webhooks import outbox


def debit_minutes(report: Report) -> list[str]:
    """The call's minutes, debited from the workspace's credits with the call itself."""
    credits.debit_call(workspace_id=report.workspace_id, call_id=report.call_id, duration_ms=report.duration_ms)
    return []


def store_structured_data(report: Report) -> list[str]:
    """The values the agent extracted, per declared field; a warning for each one not kept."""
    if not report.structured_data:
        return []
    return insights.store_report_values(workspace_id=report.workspace_id, call_id=report.call_id,
                                        started_at=report.started_at, agent_id=report.agent_id,
                                        call_type=report.call_type, structured_data=report.structured_data)


def enqueue_webhook_events(report: Report) -> list[str]:
    """The outbound end-of-call-report of each subscription of the workspace, its transcript masked
    as the stored call's is; the delivery workers of this process are woken once the call has
    committed."""
    payload = outbound_payload(report)
    if report.transcript:
        payload["transcript"] = masked_text(report.workspace_id, report.transcript)
    if outbox.enqueue_call(workspace_id=report.workspace_id, call_id=report.call_id, payload=payload):
        after_commit(outbox.notify_enqueued)
    return []


def settle_campaign_contact(report: Report) -> list[str]:
    """A campaign call's report (its payload naming campaignId and contactId, and perhaps
    attemptId) settles that contact's open attempt by its endedReason; a warning when they name no
    contact of the report's workspace, which then changes nothing."""
    payload = report.raw
    if payload.get("campaignId") is None and payload.get("contactId") is None:
        return []
    return dialing.settle_from_report(workspace_id=report.workspace_id, campaign_id=payload.get("campaignId"),
                                      contact_id=payload.get("contactId"), attempt_id=payload.get("attemptId"),
                                      call_id=report.call_id, ended_reason=report.ended_reason)


def end_live_call(report: Report) -> list[str]:
    """The call its runtime registered as it started (POST /call/live), ended by the report and
    linked to the recorded call; its control requests still pending failed. Nothing for a call
    never registered."""
    return live_calls.end_from_report(report)


def mask_transcript(report: Report) -> list[str]:
    """The transcript the report brought, masked as the workspace's speech filter says, when it is on."""
    mask_reported_transcript(workspace_id=report.workspace_id, call_id=report.call_id, transcript=report.transcript)
    return []


SUBSCRIBERS = (mask_transcript, debit_minutes, store_structured_data, settle_campaign_contact, end_live_call,
               enqueue_webhook_events)


IMPORT_SUBSCRIBERS = (mask_transcript, store_structured_data)
IMPORT_SUBSCRIBERS_DEBITED = (mask_transcript, debit_minutes, store_structured_data)


def record(report: Report) -> Ingested:
    """Record the reported call once, with everything it triggers (see the module's docstring)."""
    return ingest(report, subscribers=SUBSCRIBERS)


def import_calls(*, workspace_id: str, body: bytes, media_type: str) -> imports.ImportReport:
    """Record each good row of a file of calls once, with what an imported call triggers (see the
    module's docstring), debited as the workspace's settings say when the import starts."""
    debited = workspaces.get(workspace_id).settings["debitImportedCalls"]
    return imports.import_calls(workspace_id=workspace_id, body=body, media_type=media_type,
                                subscribers=IMPORT_SUBSCRIBERS_DEBITED if debited else IMPORT_SUBSCRIBERS)
