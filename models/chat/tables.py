"""The tables of chat sessions: a session pinned to a version of an agent or a workflow, and its
messages in order (models.chat.sessions)."""
from __future__ import annotations

from peewee import CharField, DateTimeField, ForeignKeyField, IntegerField, TextField

from models.kernel.db import JSONField, new_id, utcnow
from models.kernel.scoping import WorkspaceScoped

# Who says a message: the person testing (a caller's turn to the engine) or the agent.
USER, AGENT = "user", "agent"
ROLES = (USER, AGENT)


class ChatSession(WorkspaceScoped):
    id = CharField(primary_key=True, default=new_id)
    entity_type = CharField(max_length=16)  # agent or workflow
    entity_id = CharField()
    version_id = CharField()
    version_number = IntegerField()
    # The agent that speaks (the entity itself, or the first agent the workflow reaches) and its
    # side as the session started (models.conversations.engine.AgentScript, as a JSON object): a
    # session keeps talking to what it started with, whatever is published or deleted meanwhile.
    agent_id = CharField()
    agent = JSONField()
    created_by = CharField()
    created_at = DateTimeField(default=utcnow)
    last_message_at = DateTimeField(null=True)
    # How many messages it holds: the last one's ``seq``, incremented by the transaction that adds them.
    message_count = IntegerField(default=0)
    prompt_tokens = IntegerField(default=0)
    completion_tokens = IntegerField(default=0)
    # When the agent ended the call (said an end-call phrase); a session so ended takes no more messages.
    ended_at = DateTimeField(null=True)

    class Meta:
        table_name = "chat_session"
        indexes = ((("workspace", "entity_type", "entity_id", "created_at", "id"), False),)


class ChatMessage(WorkspaceScoped):
    id = CharField(primary_key=True, default=new_id)
    session = ForeignKeyField(ChatSession, on_delete="CASCADE", backref="+", index=False)
    # 1, 2, 3... in the session, unique: the order of the conversation, whatever the clocks say.
    seq = IntegerField()
    role = CharField(max_length=8)
    text = TextField()
    created_at = DateTimeField(default=utcnow)
    # What the agent's reply cost (0 for a first message, said as configured); None for the user's.
    prompt_tokens = IntegerField(null=True)
    completion_tokens = IntegerField(null=True)

    class Meta:
        table_name = "chat_message"
        indexes = ((("session", "seq"), True),)
