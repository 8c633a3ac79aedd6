"""Personas: createPersona, listPersonas, getPersona, updatePersona, deletePersona."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import deleted, iso
from models.personas import personas
from models.personas.personas import PersonaRecord

# The fields a body may carry, by their names on the wire and in the domain.
_FIELDS = {"name": "name", "goal": "goal", "traits": "traits", "language": "language", "openingLine": "opening_line",
           "facts": "facts", "constraints": "constraints", "endCondition": "end_condition", "metadata": "metadata"}


def persona_shape(record: PersonaRecord) -> dict:
    return {"id": record.id, "workspaceId": record.workspace_id, "name": record.name, "goal": record.goal,
            "traits": record.traits, "language": record.language, "openingLine": record.opening_line,
            "facts": record.facts, "constraints": record.constraints, "endCondition": record.end_condition,
            "metadata": record.metadata, "createdBy": record.created_by, "createdAt": iso(record.created_at),
            "updatedAt": iso(record.updated_at)}


def _given(body: dict) -> dict:
    return {name: body[key] for key, name in _FIELDS.items() if key in body}


def create_persona(workspaceId: str, body: dict, principal):
    record = personas.create_persona(principal, workspace_id=workspaceId, **_given(body))
    return ok({"persona": persona_shape(record)}, "Persona created")


def list_personas(workspaceId: str, limit: int = 20, offset: int = 0, q: str | None = None):
    page = personas.list_personas(workspace_id=workspaceId, limit=limit, offset=offset, q=q)
    return ok({"personas": [persona_shape(p) for p in page.items], "pagination": page.pagination()})


def get_persona(workspaceId: str, personaId: str):
    return ok({"persona": persona_shape(personas.get_persona(workspace_id=workspaceId, persona_id=personaId))})


def update_persona(workspaceId: str, personaId: str, body: dict):
    record = personas.update_persona(workspace_id=workspaceId, persona_id=personaId, **_given(body))
    return ok({"persona": persona_shape(record)}, "Persona updated")


def delete_persona(workspaceId: str, personaId: str):
    personas.delete_persona(workspace_id=workspaceId, persona_id=personaId)
    return deleted(personaId, "Persona deleted")
