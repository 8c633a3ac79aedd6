"""API keys: createApiKey, listApiKeys, getApiKey, deleteApiKeys, and the wire shape of a key."""
from api.envelope import ok
from handlers.wire import id_list, iso, parse_datetime
from models.identity import api_keys
from models.identity.api_keys import ApiKeyRecord
from models.identity.rate_limits import Limit


def create_api_key(body: dict, workspaceId: str, principal):
    rate_limit = body.get("rateLimit")
    key, secret = api_keys.create_api_key(
        principal, workspace_id=workspaceId, name=body["name"], user_id=body["userId"],
        expires_at=parse_datetime(body.get("expiresAt"), "expiresAt"),
        rate_limit=Limit(rate_limit["requestsPerMinute"], rate_limit["requestsPerDay"]) if rate_limit else None,
        permissions=body.get("permissions"),
    )
    return ok({"apiKey": {**api_key_shape(key), "key": secret}, "key": secret}, "API key created")


def list_api_keys(workspaceId: str, principal, limit: int = 20, offset: int = 0):
    page = api_keys.list_api_keys(principal, workspace_id=workspaceId, limit=limit, offset=offset)
    return ok({"apiKeys": [api_key_shape(key) for key in page.items], "pagination": page.pagination()})


def get_api_key(apiKeyId: str, workspaceId: str, principal):
    return ok({"apiKey": api_key_shape(api_keys.get_api_key(principal, workspace_id=workspaceId, key_id=apiKeyId))})


def delete_api_keys(workspaceId: str, ids: list[str], principal):
    count = api_keys.delete_api_keys(principal, workspace_id=workspaceId, ids=id_list(ids, "ids"))
    return ok({"success": True, "deletedCount": count}, f"{count} API key{'' if count == 1 else 's'} deleted")


def api_key_shape(key: ApiKeyRecord) -> dict:
    """A key as the contract's ApiKey schema says, without its secret."""
    shape = {
        "id": key.id,
        "workspaceId": key.workspace_id,
        "userId": key.user_id,
        "name": key.name,
        "isActive": key.is_active,
        "createdAt": iso(key.created_at),
        "lastUsedAt": iso(key.last_used_at),
        "expiresAt": iso(key.expires_at),
        "permissions": key.permissions,  # frozen in catalog order
        "creator": {"id": key.user_id, "email": key.user_email, "displayName": key.user_display_name},
    }
    if (limit := key.rate_limit) is not None:
        shape["rateLimit"] = {"requestsPerMinute": limit.per_minute, "requestsPerDay": limit.per_day}
    return shape
