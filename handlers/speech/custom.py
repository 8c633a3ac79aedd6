"""The vocabulary: createAbbreviation, listAbbreviations, getAbbreviation, updateAbbreviation, deleteAbbreviation."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import deleted, iso
from models.speech import vocabulary
from models.speech.vocabulary import TermRecord


def abbreviation_shape(record: TermRecord) -> dict:
    return {"id": record.id, "workspaceId": record.workspace_id, "written": record.written, "spoken": record.spoken,
            "createdBy": record.created_by, "createdAt": iso(record.created_at), "updatedAt": iso(record.updated_at)}


def create_abbreviation(workspaceId: str, body: dict, principal):
    record = vocabulary.create_term(principal, workspace_id=workspaceId, written=body["written"],
                                    spoken=body.get("spoken"))
    return ok({"abbreviation": abbreviation_shape(record)}, "Term created")


def list_abbreviations(workspaceId: str, limit: int = 20, offset: int = 0):
    page = vocabulary.list_terms(workspace_id=workspaceId, limit=limit, offset=offset)
    return ok({"abbreviations": [abbreviation_shape(t) for t in page.items], "pagination": page.pagination()})


def get_abbreviation(workspaceId: str, abbreviationId: str):
    return ok({"abbreviation": abbreviation_shape(vocabulary.get_term(workspace_id=workspaceId,
                                                                      term_id=abbreviationId))})


def update_abbreviation(workspaceId: str, abbreviationId: str, body: dict):
    record = vocabulary.update_term(workspace_id=workspaceId, term_id=abbreviationId, **body)
    return ok({"abbreviation": abbreviation_shape(record)}, "Term updated")


def delete_abbreviation(workspaceId: str, abbreviationId: str):
    vocabulary.delete_term(workspace_id=workspaceId, term_id=abbreviationId)
    return deleted(abbreviationId, "Term deleted")
