"""A campaign's contacts: addCampaignContacts, importCampaignContacts, listCampaignContacts,
getCampaignContact, deleteCampaignContact."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import deleted, iso
from models.campaigns import contacts
from models.campaigns.contacts import AddReport, ContactRecord


def contact_shape(record: ContactRecord) -> dict:
    return {"id": record.id, "campaignId": record.campaign_id, "number": record.number, "name": record.name,
            "alias": record.alias, "timeZone": record.time_zone, "variables": record.variables,
            "state": record.state, "attempts": record.attempts, "nextAttemptAt": iso(record.next_attempt_at),
            "lastOutcome": record.last_outcome, "lastCallId": record.last_call_id,
            "createdAt": iso(record.created_at), "updatedAt": iso(record.updated_at)}


def report_shape(report: AddReport, position: str) -> dict:
    return {"added": report.added, "merged": report.merged, "suppressed": report.suppressed,
            "failed": [{position: f.position, "number": f.number, "reason": f.reason} for f in report.failed]}


def add_campaign_contacts(workspaceId: str, campaignId: str, body: dict):
    report = contacts.add(workspace_id=workspaceId, campaign_id=campaignId, contacts=body["contacts"])
    return ok(report_shape(report, "index"), "Contacts added")


def import_campaign_contacts(workspaceId: str, campaignId: str, body):
    # A text/csv body comes as its bytes (an empty one as nothing); a JSON one carries the text in csv.
    text = body.get("csv", "") if isinstance(body, dict) else body
    report = contacts.import_csv(workspace_id=workspaceId, campaign_id=campaignId, text=text or b"")
    return ok(report_shape(report, "line"), "Contacts imported")


def list_campaign_contacts(workspaceId: str, campaignId: str, state: str | None = None, q: str | None = None,
                           limit: int = 20, offset: int = 0):
    page = contacts.list_contacts(workspace_id=workspaceId, campaign_id=campaignId, limit=limit, offset=offset,
                                  states=state.split(",") if state else None, q=q)
    return ok({"contacts": [contact_shape(c) for c in page.items], "pagination": page.pagination()})


def get_campaign_contact(workspaceId: str, campaignId: str, contactId: str):
    record = contacts.get(workspace_id=workspaceId, campaign_id=campaignId, contact_id=contactId)
    return ok({"contact": contact_shape(record)})


def delete_campaign_contact(workspaceId: str, campaignId: str, contactId: str):
    contacts.delete(workspace_id=workspaceId, campaign_id=campaignId, contact_id=contactId)
    return deleted(contactId, "Contact removed from the campaign")
