"""Chat sessions: a version of an agent or a workflow tested by hand, one typed message at a time.

A session is pinned to a version (by default the entity's live one, else its latest) and keeps the
agent side that version gave when it started (models.conversations.targets): later saves, a new
live version, even the version's deletion, do not change what it talks to. If that agent has a
first message, the session opens with it. Each message sent is a caller's turn of the
conversation engine (models.conversations.engine), which the agent answers from the whole
conversation so far; an answer that says one of the agent's end-call phrases ends the session.

Sending waits on the chat-completions endpoint (up to LLM_TIMEOUT_S), and holds no transaction
while it waits: it reads the session and its messages, asks, then writes the message and its reply
in one short transaction that checks again what it read. That transaction starts by updating the
session's row (``message_count + 2``, where the session is still open and has room), which locks
it and numbers the two messages: two sends to one session at once may both ask, each then appends
its pair after the other's, and neither takes the session past ``MAX_MESSAGES`` or past the
agent's end of the call. A failed request to the endpoint writes nothing, so that the client can
send the same text again.
"""
from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from peewee import fn

from models.chat.tables import AGENT, USER, ChatMessage, ChatSession
from models.configs import entities, versioning
from models.conversations import engine, targets
from models.conversations.engine import AgentScript
from models.conversations.transcript import Turn
from models.identity.principal import Principal
from models.integrations import llm
from models.kernel.chat_completions import ChatCompletionError, Usage
from models.kernel.db import database, new_id, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound, UpstreamFailed
from models.kernel.pagination import Page, PageQuery
from models.kernel.scoping import same_workspace
from models.kernel.sql import Prepared
from models.kernel.text import text_problem

# A session's messages, its first message and the agent's replies included: a test by hand is a
# few dozen turns, and each reply sends the endpoint the whole conversation.
MAX_MESSAGES = 200
MAX_TEXT_CHARS = 4000


class SessionRecord(NamedTuple):
    id: str
    workspace_id: str
    entity_type: str
    entity_id: str
    version_id: str
    version_number: int
    agent_id: str
    created_by: str
    created_at: datetime
    last_message_at: datetime | None
    message_count: int
    prompt_tokens: int
    completion_tokens: int
    ended_at: datetime | None


class MessageRecord(NamedTuple):
    id: str
    session_id: str
    seq: int
    role: str  # user or agent
    text: str
    created_at: datetime
    prompt_tokens: int | None  # None for the user's messages
    completion_tokens: int | None


class Exchange(NamedTuple):
    """What one message sent made: the user's message, the agent's reply, and the session after."""
    session: SessionRecord
    sent: MessageRecord
    reply: MessageRecord
    ends_call: bool


_S, _M = ChatSession, ChatMessage
_SESSION_COLUMNS = (_S.id, _S.workspace, _S.entity_type, _S.entity_id, _S.version_id, _S.version_number, _S.agent_id,
                    _S.created_by, _S.created_at, _S.last_message_at, _S.message_count, _S.prompt_tokens,
                    _S.completion_tokens, _S.ended_at)
_MESSAGE_COLUMNS = (_M.id, _M.session, _M.seq, _M.role, _M.text, _M.created_at, _M.prompt_tokens,
                    _M.completion_tokens)


def _of_entity(workspace_id, entity_type, entity_id, *columns):
    return _S.in_workspace(workspace_id, *columns).where((_S.entity_type == entity_type) & (_S.entity_id == entity_id))


# Newest first, along the index (workspace, entity_type, entity_id, created_at, id).
_SESSIONS = PageQuery(
    lambda workspace_id, entity_type, entity_id, limit, offset:
        _of_entity(workspace_id, entity_type, entity_id, *_SESSION_COLUMNS)
        .order_by(_S.created_at.desc(), _S.id.desc()).limit(limit).offset(offset),
    lambda workspace_id, entity_type, entity_id: _of_entity(workspace_id, entity_type, entity_id, fn.COUNT(_S.id)))

_SessionWithAgent = NamedTuple("_SessionWithAgent", [*SessionRecord.__annotations__.items(), ("agent", dict)])
_ONE = Prepared(lambda workspace_id, entity_type, entity_id, session_id:
                _of_entity(workspace_id, entity_type, entity_id, *_SESSION_COLUMNS, _S.agent)
                .where(_S.id == session_id))


def _messages_of(workspace_id, entity_type, entity_id, session_id, *columns):
    """The session's messages, held to a session of that entity (a session id of another entity,
    or of another workspace, joins nothing)."""
    return (_M.in_workspace(workspace_id, *columns)
            .join(_S, on=same_workspace(_S.id == _M.session, _S, _M))
            .where((_M.session == session_id) & (_S.entity_type == entity_type) & (_S.entity_id == entity_id)))


# Oldest first, along the unique index (session, seq).
_MESSAGES = PageQuery(
    lambda workspace_id, entity_type, entity_id, session_id, limit, offset:
        _messages_of(workspace_id, entity_type, entity_id, session_id, *_MESSAGE_COLUMNS)
        .order_by(_M.seq).limit(limit).offset(offset),
    lambda workspace_id, entity_type, entity_id, session_id:
        _messages_of(workspace_id, entity_type, entity_id, session_id, fn.COUNT(_M.id)))


class _Said(NamedTuple):
    role: str
    text: str
    created_at: datetime


# What the engine is given: every message of the session in order (the session was read first).
_CONVERSATION = Prepared(lambda workspace_id, session_id: _M.in_workspace(workspace_id, _M.role, _M.text, _M.created_at)
                         .where(_M.session == session_id).order_by(_M.seq))


# --- sessions ------------------------------------------------------------------------------------

def start(principal: Principal, *, workspace_id: str, entity_type: str, entity_id: str,
          version_id: str | None = None) -> tuple[SessionRecord, list[MessageRecord]]:
    """A new session with ``version_id`` of the entity (its live version, else its latest, when
    None), opened by the agent's first message if it has one. NotFound for an entity or a version
    not of the workspace (a version of another entity too); InvalidInput for a workflow that
    reaches no agent with a version."""
    target = targets.resolve(workspace_id=workspace_id, entity_type=entity_type, entity_id=entity_id,
                             version_id=version_id)
    now = utcnow()
    first = target.agent.first_message.strip()
    ended_at = now if first and engine.ends_call(target.agent, first) else None
    session = SessionRecord(
        id=None, workspace_id=workspace_id, entity_type=entity_type, entity_id=entity_id,
        version_id=target.version_id, version_number=target.version_number, agent_id=target.agent_id,
        created_by=principal.user_id, created_at=now, last_message_at=now if first else None,
        message_count=1 if first else 0, prompt_tokens=0, completion_tokens=0, ended_at=ended_at)
    with database.atomic():
        row = _S.create(workspace=workspace_id, agent=target.agent._asdict(),
                        **{k: v for k, v in session._asdict().items() if k not in ("id", "workspace_id")})
        session = session._replace(id=row.id)
        messages = []
        if first:
            # Said as configured, so it cost no tokens.
            message = _M.create(workspace=workspace_id, session=row.id, seq=1, role=AGENT, text=first, created_at=now,
                                prompt_tokens=0, completion_tokens=0)
            messages.append(MessageRecord(message.id, row.id, 1, AGENT, first, now, 0, 0))
    return session, messages


def list_sessions(*, workspace_id: str, entity_type: str, entity_id: str, limit: int,
                  offset: int) -> Page[SessionRecord]:
    """The entity's sessions, newest first; NotFound for an entity the workspace lacks (asked only
    when the page is empty)."""
    page = _SESSIONS.page(SessionRecord, workspace_id=workspace_id, entity_type=entity_type, entity_id=entity_id,
                          limit=limit, offset=offset)
    if not page.items:
        versioning.require_entity(entities.kind(entity_type), workspace_id, entity_id)
    return page


def _read(workspace_id: str, entity_type: str, entity_id: str, session_id: str) -> _SessionWithAgent:
    row = _ONE.first(_SessionWithAgent, workspace_id=workspace_id, entity_type=entity_type, entity_id=entity_id,
                     session_id=session_id)
    if row is None:
        raise NotFound(f"No chat session {session_id} of {entity_type} {entity_id} in this workspace.")
    return row


def get(*, workspace_id: str, entity_type: str, entity_id: str, session_id: str) -> SessionRecord:
    return SessionRecord._make(_read(workspace_id, entity_type, entity_id, session_id)[:-1])


# --- messages ------------------------------------------------------------------------------------

def list_messages(*, workspace_id: str, entity_type: str, entity_id: str, session_id: str, limit: int,
                  offset: int) -> Page[MessageRecord]:
    """The session's messages, oldest first; NotFound for a session the entity lacks (asked only
    when the page is empty)."""
    page = _MESSAGES.page(MessageRecord, workspace_id=workspace_id, entity_type=entity_type, entity_id=entity_id,
                          session_id=session_id, limit=limit, offset=offset)
    if not page.items:
        get(workspace_id=workspace_id, entity_type=entity_type, entity_id=entity_id, session_id=session_id)
    return page


def _text(value: str) -> str:
    if problem := text_problem(value, multiline=True):
        raise InvalidInput(f"text {problem}.")
    value = value.strip()
    if not 1 <= len(value) <= MAX_TEXT_CHARS:
        raise InvalidInput(f"text must be 1 to {MAX_TEXT_CHARS} characters once trimmed; {len(value)} given.")
    return value


def _refuse_closed(session_id: str, ended: bool, count: int) -> None:
    """Conflict when the session takes no more messages: the agent ended it, or it is full."""
    if ended:
        raise Conflict(f"The agent ended the call of chat session {session_id} (it said an end-call phrase): "
                       "start a new session to go on.")
    if count + 2 > MAX_MESSAGES:
        raise Conflict(f"A chat session holds at most {MAX_MESSAGES} messages; session {session_id} has {count}, "
                       f"and a message with its reply would make {count + 2}: start a new session.")


def _at_ms(session_start: datetime, moment: datetime) -> int:
    return max(0, round((moment - session_start).total_seconds() * 1000))


def send(*, workspace_id: str, entity_type: str, entity_id: str, session_id: str, text: str) -> Exchange:
    """The user's ``text`` and the agent's reply to the conversation so far, both added to the
    session (see the module's docstring); NotFound for a session the entity lacks, Conflict for
    one that is ended or full, Unavailable without an endpoint, UpstreamFailed when the endpoint
    gives no reply (and then nothing is added)."""
    text = _text(text)
    session = _read(workspace_id, entity_type, entity_id, session_id)
    _refuse_closed(session_id, session.ended_at is not None, session.message_count)
    endpoint = llm.required_for(workspace_id)
    sent_at = utcnow()
    turns = [Turn("caller" if said.role == USER else "agent", said.text, _at_ms(session.created_at, said.created_at))
             for said in _CONVERSATION.records(_Said, workspace_id=workspace_id, session_id=session_id)]
    turns.append(Turn("caller", text, _at_ms(session.created_at, sent_at)))
    try:
        reply = engine.agent_reply(endpoint, AgentScript(**session.agent), turns)
    except ChatCompletionError as exc:
        raise UpstreamFailed(exc.message) from None
    return _append(session, sent_at, text, reply.text, reply.usage, reply.ends_call)


def _append(session: _SessionWithAgent, sent_at: datetime, text: str, reply: str, usage: Usage,
            ends_call: bool) -> Exchange:
    """The message and its reply written after the session's last message, if the session is still
    open and has room for both (it may have changed while the endpoint was asked)."""
    now = utcnow()
    changes = {_S.message_count: _S.message_count + 2, _S.last_message_at: now,
               _S.prompt_tokens: _S.prompt_tokens + usage.prompt_tokens,
               _S.completion_tokens: _S.completion_tokens + usage.completion_tokens}
    if ends_call:
        changes[_S.ended_at] = now
    with database.atomic():
        # The first statement: it locks the session's row until the messages are in.
        rows = list(_S.update(changes).where(
            (_S.workspace == session.workspace_id) & (_S.id == session.id) & _S.ended_at.is_null()
            & (_S.message_count <= MAX_MESSAGES - 2))
            .returning(_S.message_count, _S.prompt_tokens, _S.completion_tokens).tuples().execute())
        if not rows:
            now_row = _ONE.first(_SessionWithAgent, workspace_id=session.workspace_id,
                                 entity_type=session.entity_type, entity_id=session.entity_id, session_id=session.id)
            if now_row is None:  # deleted meanwhile, with its workspace
                raise NotFound(f"No chat session {session.id} in this workspace.")
            _refuse_closed(session.id, now_row.ended_at is not None, now_row.message_count)
            raise Conflict(f"Chat session {session.id} changed while its reply was asked; send the message again.")
        count, prompt_tokens, completion_tokens = rows[0]
        sent = MessageRecord(None, session.id, count - 1, USER, text, sent_at, None, None)
        answer = MessageRecord(None, session.id, count, AGENT, reply, now, usage.prompt_tokens, usage.completion_tokens)
        sent, answer = sent._replace(id=new_id()), answer._replace(id=new_id())
        _M.insert_many([{"id": m.id, "workspace": session.workspace_id, "session": m.session_id, "seq": m.seq,
                         "role": m.role, "text": m.text, "created_at": m.created_at, "prompt_tokens": m.prompt_tokens,
                         "completion_tokens": m.completion_tokens} for m in (sent, answer)]).execute()
    after = SessionRecord._make(session[:-1])._replace(
        message_count=count, last_message_at=now, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
        ended_at=now if ends_call else None)
    return Exchange(after, sent, answer, ends_call)
