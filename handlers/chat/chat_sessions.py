"""Chat sessions: createChatSession, listChatSessions, getChatSession, sendChatMessage,
listChatMessages."""
from __future__ import annotations

from api.audit_trail import note
from api.envelope import ok
from handlers.wire import iso
from models.chat import sessions
from models.chat.sessions import MessageRecord, SessionRecord


def session_shape(record: SessionRecord) -> dict:
    return {"id": record.id, "workspaceId": record.workspace_id, "entityType": record.entity_type,
            "entityId": record.entity_id, "versionId": record.version_id, "versionNumber": record.version_number,
            "agentId": record.agent_id, "createdBy": record.created_by, "createdAt": iso(record.created_at),
            "lastMessageAt": iso(record.last_message_at), "messageCount": record.message_count,
            "usage": {"promptTokens": record.prompt_tokens, "completionTokens": record.completion_tokens},
            "ended": record.ended_at is not None, "endedAt": iso(record.ended_at)}


def message_shape(record: MessageRecord) -> dict:
    usage = None if record.prompt_tokens is None else {"promptTokens": record.prompt_tokens,
                                                        "completionTokens": record.completion_tokens}
    return {"id": record.id, "sessionId": record.session_id, "role": record.role, "text": record.text,
            "createdAt": iso(record.created_at), "usage": usage}


def create_chat_session(entityType: str, entityId: str, workspaceId: str, principal, body: dict | None = None):
    session, messages = sessions.start(principal, workspace_id=workspaceId, entity_type=entityType,
                                       entity_id=entityId, version_id=(body or {}).get("versionId"))
    note(sessionId=session.id)
    return ok({"session": session_shape(session), "messages": [message_shape(m) for m in messages]},
              "Chat session started")


def list_chat_sessions(entityType: str, entityId: str, workspaceId: str, limit: int = 20, offset: int = 0):
    page = sessions.list_sessions(workspace_id=workspaceId, entity_type=entityType, entity_id=entityId, limit=limit,
                                  offset=offset)
    return ok({"sessions": [session_shape(s) for s in page.items], "pagination": page.pagination()})


def get_chat_session(entityType: str, entityId: str, sessionId: str, workspaceId: str):
    return ok({"session": session_shape(sessions.get(workspace_id=workspaceId, entity_type=entityType,
                                                     entity_id=entityId, session_id=sessionId))})


def send_chat_message(entityType: str, entityId: str, sessionId: str, body: dict, workspaceId: str):
    exchange = sessions.send(workspace_id=workspaceId, entity_type=entityType, entity_id=entityId,
                             session_id=sessionId, text=body["text"])
    return ok({"messages": [message_shape(exchange.sent), message_shape(exchange.reply)],
               "endsCall": exchange.ends_call, "session": session_shape(exchange.session)},
              "The agent ended the call" if exchange.ends_call else "The agent replied")


def list_chat_messages(entityType: str, entityId: str, sessionId: str, workspaceId: str, limit: int = 20,
                       offset: int = 0):
    page = sessions.list_messages(workspace_id=workspaceId, entity_type=entityType, entity_id=entityId,
                                  session_id=sessionId, limit=limit, offset=offset)
    return ok({"messages": [message_shape(m) for m in page.items], "pagination": page.pagination()})
