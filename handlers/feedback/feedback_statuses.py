"""The workspace's feedback statuses: getFeedbackStatusConfig, replaceFeedbackStatusConfig."""
from __future__ import annotations

from api.envelope import ok
from models.feedback import statuses


def _shape(found) -> dict:
    return {"statuses": [{"name": s.name, "resolved": s.resolved} for s in found]}


def get_feedback_status_config(workspaceId: str):
    return ok(_shape(statuses.of_workspace(workspaceId)))


def replace_feedback_status_config(workspaceId: str, body: dict, principal):
    return ok(_shape(statuses.replace(principal, workspace_id=workspaceId, statuses=body["statuses"])),
              "Feedback statuses saved")
