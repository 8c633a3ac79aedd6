"""The workspace's phone book: createPhoneAlias, listPhoneAliases, getPhoneAlias, updatePhoneAlias,
deletePhoneAlias."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import deleted, iso
from models.telephony import phone_book
from models.telephony.phone_book import AliasRecord


def alias_shape(record: AliasRecord) -> dict:
    return {"id": record.id, "workspaceId": record.workspace_id, "name": record.name, "number": record.number,
            "createdBy": record.created_by, "createdAt": iso(record.created_at), "updatedAt": iso(record.updated_at)}


def create_phone_alias(workspaceId: str, body: dict, principal):
    record = phone_book.create(principal, workspace_id=workspaceId, name=body["name"], number=body["number"])
    return ok({"alias": alias_shape(record)}, "Phone book entry added")


def list_phone_aliases(workspaceId: str, limit: int = 20, offset: int = 0, q: str | None = None):
    page = phone_book.list_aliases(workspace_id=workspaceId, limit=limit, offset=offset, q=q)
    return ok({"aliases": [alias_shape(a) for a in page.items], "pagination": page.pagination()})


def get_phone_alias(workspaceId: str, aliasId: str):
    return ok({"alias": alias_shape(phone_book.get(workspace_id=workspaceId, alias_id=aliasId))})


def update_phone_alias(workspaceId: str, aliasId: str, body: dict):
    record = phone_book.update(workspace_id=workspaceId, alias_id=aliasId, name=body.get("name"),
                               number=body.get("number"))
    return ok({"alias": alias_shape(record)}, "Phone book entry updated")


def delete_phone_alias(workspaceId: str, aliasId: str):
    phone_book.delete(workspace_id=workspaceId, alias_id=aliasId)
    return deleted(aliasId, "Phone book entry deleted")
