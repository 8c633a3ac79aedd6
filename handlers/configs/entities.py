"""What the agents and workflows groups share: the wire shape of an entity, and their five
operations written once for either kind (handlers.agents and handlers.workflows name them)."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import deleted, iso
from models.configs import entities
from models.configs.entities import EntityDetail, EntityRecord
from models import entity_users

from .versions import version_shape


def summary_shape(entity: EntityRecord) -> dict:
    return {
        "id": entity.id,
        "workspaceId": entity.workspace_id,
        "name": entity.name,
        "createdAt": iso(entity.created_at),
        "updatedAt": iso(entity.updated_at),
        "createdBy": entity.created_by,
        "headVersionId": entity.head_version_id,
        "headVersionNumber": entity.head_version_number,
        "publishedVersionId": entity.published_version_id,
        "publishedVersionNumber": entity.published_version_number,
    }


def detail_shape(detail: EntityDetail) -> dict:
    return {**summary_shape(detail.entity), "config": detail.config, "liveConfig": detail.live_config}


class EntityHandlers:
    """createX, listX, getX, updateX, deleteX for one kind; ``key`` and ``plural`` name the
    result's keys (agent, agents), ``label`` its messages."""

    def __init__(self, model, key: str, plural: str, label: str) -> None:
        self.model, self.key, self.plural, self.label = model, key, plural, label

    def create(self, body: dict, workspace_id: str, principal):
        detail = entities.create(self.model, principal, workspace_id=workspace_id, name=body["name"],
                                 config=body.get("config"), version_name=body.get("versionName"))
        return ok({self.key: detail_shape(detail)}, f"{self.label} created")

    def list(self, workspace_id: str, limit: int, offset: int):
        page = entities.list_page(self.model, workspace_id=workspace_id, limit=limit, offset=offset)
        return ok({self.plural: [summary_shape(e) for e in page.items], "pagination": page.pagination()})

    def get(self, entity_id: str, workspace_id: str):
        return ok({self.key: detail_shape(entities.get(self.model, workspace_id=workspace_id, entity_id=entity_id))})

    def update(self, entity_id: str, body: dict, workspace_id: str, principal):
        detail, version = entities.update(self.model, principal, workspace_id=workspace_id, entity_id=entity_id,
                                          name=body.get("name"), config=body.get("config"),
                                          version_name=body.get("versionName"))
        message = f"{self.label} updated" + (f"; version {version.version_number} saved" if version else "")
        return ok({self.key: detail_shape(detail), "version": version and version_shape(version)}, message)

    def delete(self, entity_id: str, workspace_id: str):
        entity_users.delete(self.model, workspace_id=workspace_id, entity_id=entity_id)
        return deleted(entity_id, f"{self.label} deleted")
