"""Campaigns: createCampaign, listCampaigns, getCampaign, updateCampaign, deleteCampaign,
setCampaignStatus."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import deleted, iso, parse_datetime
from models.campaigns import campaigns
from models.campaigns.campaigns import CampaignRecord


def campaign_shape(record: CampaignRecord) -> dict:
    agent = record.target_id if record.target_type == "agent" else None
    workflow = record.target_id if record.target_type == "workflow" else None
    return {"id": record.id, "workspaceId": record.workspace_id, "name": record.name, "status": record.status,
            "agentId": agent, "workflowId": workflow, "callerNumberId": record.caller_number_id,
            "callerNumber": record.caller_number, "scheduleId": record.schedule_id,
            "callingHours": record.calling_hours, "startsAt": iso(record.starts_at), "endsAt": iso(record.ends_at),
            "maxConcurrentCalls": record.max_concurrent_calls, "maxAttempts": record.max_attempts,
            "retryDelaySeconds": record.retry_delay_s, "contactCount": record.contact_count or 0,
            "createdBy": record.created_by, "createdAt": iso(record.created_at),
            "updatedAt": iso(record.updated_at), "completedAt": iso(record.completed_at)}


def create_campaign(workspaceId: str, body: dict, principal):
    defaults = campaigns.DEFAULTS
    record = campaigns.create(
        principal, workspace_id=workspaceId, name=body["name"], caller_number_id=body["callerNumberId"],
        agent_id=body.get("agentId"), workflow_id=body.get("workflowId"), schedule_id=body.get("scheduleId"),
        calling_hours=body.get("callingHours"), starts_at=parse_datetime(body.get("startsAt"), "startsAt"),
        ends_at=parse_datetime(body.get("endsAt"), "endsAt"),
        max_concurrent_calls=body.get("maxConcurrentCalls", defaults["max_concurrent_calls"]),
        max_attempts=body.get("maxAttempts", defaults["max_attempts"]),
        retry_delay_s=body.get("retryDelaySeconds", defaults["retry_delay_s"]))
    return ok({"campaign": campaign_shape(record)}, "Campaign created")


def list_campaigns(workspaceId: str, status: str | None = None, q: str | None = None, limit: int = 20,
                   offset: int = 0):
    page = campaigns.list_campaigns(workspace_id=workspaceId, limit=limit, offset=offset,
                                    statuses=status.split(",") if status else None, q=q)
    return ok({"campaigns": [campaign_shape(c) for c in page.items], "pagination": page.pagination()})


def get_campaign(workspaceId: str, campaignId: str):
    return ok({"campaign": campaign_shape(campaigns.get(workspace_id=workspaceId, campaign_id=campaignId))})


def update_campaign(workspaceId: str, campaignId: str, body: dict):
    renamed = campaigns.rename(workspace_id=workspaceId, campaign_id=campaignId, name=body["name"])
    return ok({"campaign": {"id": renamed.id, "name": renamed.name, "updatedAt": iso(renamed.updated_at)}},
              "Campaign updated")


def delete_campaign(workspaceId: str, campaignId: str):
    campaigns.delete(workspace_id=workspaceId, campaign_id=campaignId)
    return deleted(campaignId, "Campaign deleted, with its contacts")


def set_campaign_status(workspaceId: str, campaignId: str, body: dict):
    record = campaigns.move(workspace_id=workspaceId, campaign_id=campaignId, status=body["status"])
    return ok({"campaign": campaign_shape(record)}, f"Campaign {record.status}")
