"""Chat: sessions started through the domain as the API starts them, and conversations filled in
without asking a language model (for limits and pages)."""
from __future__ import annotations

from models.kernel.db import session
from tests.support.factories.identity import Actor, principal


def chat_session(actor: Actor, entity_id: str, entity_type: str = "agent", version_id: str | None = None) -> str:
    """A new chat session with the entity (its live version unless ``version_id``); its id."""
    from models.chat import sessions
    with session():
        return sessions.start(principal(actor), workspace_id=actor.workspace_id, entity_type=entity_type,
                              entity_id=entity_id, version_id=version_id)[0].id


def chat_messages(actor: Actor, session_id: str, count: int, text: str = "Message") -> None:
    """``count`` more messages in the session, the user's and the agent's in turn (each reply
    costing 3 prompt and 2 completion tokens), numbered after those it has."""
    from models.chat.tables import AGENT, USER, ChatMessage, ChatSession
    from models.kernel.db import database, new_id, utcnow
    with session(), database.atomic():
        row = ChatSession.in_workspace(actor.workspace_id, ChatSession.message_count).where(
            ChatSession.id == session_id).get()
        start = row.message_count
        last = ChatMessage.in_workspace(actor.workspace_id, ChatMessage.role).where(
            (ChatMessage.session == session_id) & (ChatMessage.seq == start)).scalar()
        role = USER if last in (None, AGENT) else AGENT
        rows = []
        for seq in range(start + 1, start + count + 1):
            rows.append({"id": new_id(), "workspace": actor.workspace_id, "session": session_id, "seq": seq,
                         "role": role, "text": f"{text} {seq}", "created_at": utcnow(),
                         "prompt_tokens": 3 if role == AGENT else None,
                         "completion_tokens": 2 if role == AGENT else None})
            role = AGENT if role == USER else USER
        if rows:
            ChatMessage.insert_many(rows).execute()
        replies = sum(1 for r in rows if r["role"] == AGENT)
        ChatSession.update(message_count=ChatSession.message_count + count, last_message_at=utcnow(),
                           prompt_tokens=ChatSession.prompt_tokens + 3 * replies,
                           completion_tokens=ChatSession.completion_tokens + 2 * replies).where(
            ChatSession.id == session_id).execute()
