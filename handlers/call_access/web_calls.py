"""Web calls: createWebCallToken, listWebCallTokens, redeemWebCallToken."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import iso
from models.call_access import web_tokens
from models.call_access.web_tokens import WebTokenRecord
from models.kernel.db import utcnow


def web_token_shape(record: WebTokenRecord) -> dict:
    return {"id": record.id, "workspaceId": record.workspace_id, "agentId": record.agent_id,
            "versionId": record.version_id, "versionNumber": record.version_number, "createdBy": record.created_by,
            "createdAt": iso(record.created_at), "expiresAt": iso(record.expires_at),
            "redeemedAt": iso(record.redeemed_at), "status": record.status(utcnow())}


def create_web_call_token(workspaceId: str, body: dict, principal):
    record, token = web_tokens.issue(principal, workspace_id=workspaceId, agent_id=body["agentId"],
                                     version_id=body.get("versionId"), ttl_seconds=body.get("ttlSeconds"))
    return ok({"webCallToken": web_token_shape(record), "token": token, "expiresAt": iso(record.expires_at)},
              "Web-call token issued; it is shown this once and works once")


def list_web_call_tokens(workspaceId: str, limit: int = 20, offset: int = 0):
    page = web_tokens.list_tokens(workspace_id=workspaceId, limit=limit, offset=offset)
    return ok({"webCallTokens": [web_token_shape(t) for t in page.items], "pagination": page.pagination()})


def redeem_web_call_token(body: dict):
    redeemed = web_tokens.redeem(body["token"])
    return ok({"workspaceId": redeemed.workspace_id, "agentId": redeemed.agent_id, "versionId": redeemed.version_id,
               "versionNumber": redeemed.version_number, "config": redeemed.config, "tokenId": redeemed.token_id},
              "Web-call token redeemed; it works no more")
