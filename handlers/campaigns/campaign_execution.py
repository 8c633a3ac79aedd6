"""Campaign execution: claimCampaignContacts, reportCampaignAttemptOutcome, renewCampaignAttempt,
resolveCampaignContact, getCampaignProgress."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import iso
from models.campaigns import dialing
from models.campaigns.dialing import Claim, ContactRecord, Progress, RuntimeCampaign


def claim_shape(claim: Claim) -> dict:
    return {"attemptId": claim.attempt_id, "contactId": claim.contact_id, "number": claim.number, "name": claim.name,
            "alias": claim.alias, "timeZone": claim.time_zone, "variables": claim.variables, "attempt": claim.attempt,
            "leaseUntil": iso(claim.lease_until)}


def campaign_shape(campaign: RuntimeCampaign) -> dict:
    return {"id": campaign.id, "status": campaign.status, "callerNumber": campaign.caller_number,
            "target": {"type": campaign.target_type, "id": campaign.target_id, "versionId": campaign.target_version_id}}


def contact_shape(record: ContactRecord) -> dict:
    return {"id": record.id, "campaignId": record.campaign_id, "number": record.number, "name": record.name,
            "timeZone": record.time_zone, "state": record.state, "attempts": record.attempts,
            "nextAttemptAt": iso(record.next_attempt_at), "lastOutcome": record.last_outcome,
            "lastCallId": record.last_call_id, "updatedAt": iso(record.updated_at)}


def progress_shape(record: Progress) -> dict:
    contacts = record.contacts
    by_outcome = {outcome: n for outcome, n in record.attempts.items() if outcome not in ("open", "total") and n}
    return {"campaignId": record.campaign_id, "status": record.status,
            "contacts": {"pending": contacts["pending"], "inProgress": contacts["in_progress"], "done": contacts["done"],
                         "failed": contacts["failed"], "suppressed": contacts["suppressed"], "total": contacts["total"]},
            "attempts": {"total": record.attempts["total"], "open": record.attempts["open"], "byOutcome": by_outcome},
            "answerRate": record.answer_rate}


def claim_campaign_contacts(workspaceId: str, campaignId: str, body: dict | None = None):
    body = body or {}
    claimed = dialing.claim(workspace_id=workspaceId, campaign_id=campaignId, count=body.get("count", 1),
                            lease_s=body.get("leaseSeconds", dialing.DEFAULT_LEASE_S))
    count = len(claimed.claims)
    message = f"{count} contact{'' if count == 1 else 's'} claimed" if count else \
        f"No contact is due now (the campaign is {claimed.campaign.status})"
    return ok({"claims": [claim_shape(c) for c in claimed.claims], "campaign": campaign_shape(claimed.campaign)},
              message)


def report_campaign_attempt_outcome(workspaceId: str, campaignId: str, attemptId: str, body: dict, principal):
    record = dialing.report_outcome(workspace_id=workspaceId, campaign_id=campaignId, attempt_id=attemptId,
                                    outcome=body["outcome"], call_id=body.get("callId"), retry=body.get("retry"),
                                    added_by=principal.user_id)
    return ok({"contact": contact_shape(record)}, "Outcome recorded")


def renew_campaign_attempt(workspaceId: str, campaignId: str, attemptId: str, body: dict | None = None):
    renewed = dialing.renew(workspace_id=workspaceId, campaign_id=campaignId, attempt_id=attemptId,
                            lease_s=(body or {}).get("leaseSeconds", dialing.DEFAULT_LEASE_S))
    return ok({"attemptId": renewed.attempt_id, "contactId": renewed.contact_id, "attempt": renewed.attempt,
               "leaseUntil": iso(renewed.lease_until)}, "Lease renewed")


def resolve_campaign_contact(workspaceId: str, campaignId: str, contactId: str, body: dict):
    record = dialing.resolve(workspace_id=workspaceId, campaign_id=campaignId, contact_id=contactId,
                             state=body["state"])
    return ok({"contact": contact_shape(record)}, f"Contact marked {record.state}")


def get_campaign_progress(workspaceId: str, campaignId: str):
    return ok(progress_shape(dialing.progress(workspace_id=workspaceId, campaign_id=campaignId)))
