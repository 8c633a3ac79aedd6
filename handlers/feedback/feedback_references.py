"""A feedback's references: getFeedbackReferences, addFeedbackReference, deleteFeedbackReference."""
from __future__ import annotations

from api.contract import BASE_PATH
from api.envelope import ok
from handlers.wire import deleted, iso
from models.feedback import references
from models.feedback.references import ReferenceRecord

# The API path of each kind of referenced resource.
_PATHS = {"call": "/call/{id}", "solution": "/solutions/{id}", "review": "/reviews/{id}",
          "persona": "/personas/{id}", "simulation": "/simulations/{id}"}


def reference_url(record: ReferenceRecord) -> str | None:
    """The API path of what ``record`` references; a version's names its agent or workflow, so it
    is None once the version is gone."""
    if record.entity_type == "version":
        if record.version_entity_id is None:
            return None
        return f"{BASE_PATH}/versions/{record.version_entity_type}/{record.version_entity_id}/{record.entity_id}"
    return BASE_PATH + _PATHS[record.entity_type].format(id=record.entity_id)


def reference_shape(record: ReferenceRecord) -> dict:
    return {"id": record.id, "feedbackId": record.feedback_id, "entityType": record.entity_type,
            "entityId": record.entity_id, "relation": record.relation, "createdAt": iso(record.created_at),
            "url": reference_url(record), "label": references.shown_label(record), "createdBy": record.created_by}


def get_feedback_references(workspaceId: str, feedbackId: str):
    found = references.list_references(workspace_id=workspaceId, feedback_id=feedbackId)
    return ok({"success": True, "references": [reference_shape(r) for r in found]})


def add_feedback_reference(workspaceId: str, feedbackId: str, body: dict, principal):
    record = references.add_by_hand(principal, workspace_id=workspaceId, feedback_id=feedbackId,
                                    entity_type=body["entityType"], entity_id=body["entityId"],
                                    relation=body["relation"], label=body.get("label"))
    return ok({"reference": reference_shape(record)}, "Reference added")


def delete_feedback_reference(workspaceId: str, feedbackId: str, referenceId: str):
    references.delete(workspace_id=workspaceId, feedback_id=feedbackId, reference_id=referenceId)
    return deleted(referenceId, "Reference removed")
