"""API keys: createApiKey, listApiKeys, getApiKey, deleteApiKeys."""
from api.envelope import ok
from models import api_keys


def create_api_key(body: dict, workspaceId: str, principal):
    key, secret = api_keys.create_api_key(
        principal, workspace_id=workspaceId, name=body["name"], user_id=body["userId"],
        expires_at=body.get("expiresAt"), rate_limit=body.get("rateLimit"), permissions=body.get("permissions"),
    )
    return ok({"apiKey": {**key.to_api(), "key": secret}, "key": secret}, "API key created")


def list_api_keys(workspaceId: str, principal, limit: int = 20, offset: int = 0):
    page = api_keys.list_api_keys(principal, workspace_id=workspaceId, limit=limit, offset=offset)
    return ok({"apiKeys": [key.to_api() for key in page.items], "pagination": page.pagination()})


def get_api_key(apiKeyId: str, workspaceId: str, principal):
    return ok({"apiKey": api_keys.get_api_key(principal, workspace_id=workspaceId, key_id=apiKeyId).to_api()})


def delete_api_keys(workspaceId: str, ids: str, principal):
    count = api_keys.delete_api_keys(principal, workspace_id=workspaceId, ids=ids)
    return ok({"success": True, "deletedCount": count}, f"{count} API key{'' if count == 1 else 's'} deleted")
