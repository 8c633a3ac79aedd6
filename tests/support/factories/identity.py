"""Test data, made straight through the domain (no HTTP): people, workspaces, credentials.

Each factory runs in a session of its own on whatever database the models are bound to, and
returns what a test needs to act: an ``Actor`` holds the ids and the bearer secret.
"""
from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from models.api_keys import ApiKey, create_api_key
from models.db import session, utcnow
from models.identity import AccessToken, add_member, bootstrap_workspace, issue_access_token
from models.permissions import ROLES
from models.principal import Principal
from models.rate_limits import Limit


@dataclass
class Actor:
    """A user acting in a workspace with one credential."""
    workspace_id: str
    user_id: str
    email: str
    secret: str

    @property
    def headers(self) -> dict:
        return {"Authorization": f"Bearer {self.secret}"}

    def with_secret(self, secret: str) -> "Actor":
        return Actor(self.workspace_id, self.user_id, self.email, secret)


def _email(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}@example.com"


def workspace(name: str = "acme", *, display_name: str = "Owner") -> Actor:
    """A new workspace and its owner, acting with an access token."""
    email = _email("owner")
    with session():
        ws, user = bootstrap_workspace(workspace_name=name, email=email, display_name=display_name)
        _, secret = issue_access_token(email=email)
    return Actor(ws.id, user.id, email, secret)


def member(owner: Actor, role: str) -> Actor:
    """A new user with ``role`` in the owner's workspace, acting with an access token."""
    email = _email(role)
    with session():
        user = add_member(workspace_id=owner.workspace_id, email=email, role=role)
        _, secret = issue_access_token(email=email)
    return Actor(owner.workspace_id, user.id, email, secret)


def api_key(actor: Actor, *, permissions: list[str] | None = None, rate_limit: Limit | None = None,
            expires_at: datetime | None = None, name: str = "test key", **columns) -> Actor:
    """An API key of ``actor``'s user (permissions default to its role's), acting as that key.

    ``columns`` are stored as given after creation, to make states the API cannot (an expired or
    inactive key): ``expires_at`` in the past, ``is_active=False``.
    """
    with session():
        key, secret = create_api_key(_principal(actor), workspace_id=actor.workspace_id, name=name, user_id=actor.user_id,
                                     rate_limit=rate_limit, permissions=permissions)
        changes = dict(columns, **({"expires_at": expires_at} if expires_at else {}))
        if changes:
            ApiKey.update(**changes).where(ApiKey.id == key.id).execute()
    return actor.with_secret(secret)


def expire_tokens(actor: Actor) -> None:
    with session():
        AccessToken.update(expires_at=utcnow() - timedelta(seconds=1)).where(AccessToken.user == actor.user_id).execute()


def _principal(actor: Actor) -> Principal:
    return Principal("factory", "access_token", actor.user_id, actor.workspace_id, ROLES["owner"])


def agent(actor: Actor, name: str = "agent", config: dict | None = None) -> str:
    """A new agent of the actor's workspace (version 1 published); its id."""
    from models import entities
    from models.agents import Agent
    with session():
        return entities.create(Agent, _principal(actor), workspace_id=actor.workspace_id, name=name,
                               config=config).entity.id


def workflow(actor: Actor, agent_ids: list[str] = (), name: str = "workflow") -> str:
    """A new workflow routing start -> each agent in turn -> end; its id."""
    from models import entities
    from models.workflows import Workflow
    nodes = [{"id": "start", "type": "start"}] + [{"id": f"a{i}", "type": "agent", "agentId": agent_id}
                                                  for i, agent_id in enumerate(agent_ids)] + [{"id": "end", "type": "end"}]
    edges = [{"from": a["id"], "to": b["id"]} for a, b in itertools.pairwise(nodes)]
    with session():
        return entities.create(Workflow, _principal(actor), workspace_id=actor.workspace_id, name=name,
                               config={"nodes": nodes, "edges": edges}).entity.id


def save_versions(actor: Actor, agent_id: str, count: int) -> None:
    """``count`` more main-line versions of the agent, each with another prompt."""
    from models import entities
    from models.agents import Agent
    with session():
        for i in range(count):
            entities.update(Agent, _principal(actor), workspace_id=actor.workspace_id, entity_id=agent_id,
                            config={"prompt": f"Prompt number {i}"})


def report(actor: Actor, **fields) -> dict:
    """An end-of-call-report of the actor's workspace as the call runtime posts it (a new callId,
    started a minute ago, 42 s long); ``fields`` replace or add wire fields (None removes one)."""
    started = utcnow().replace(microsecond=0) - timedelta(minutes=1)
    body = {"type": "end-of-call-report", "callId": str(uuid.uuid4()), "workspaceId": actor.workspace_id,
            "durationMs": 42_000, "status": "completed", "callEndReasonCategory": "customer",
            "customer": "+14155550123", "startedAt": started.isoformat() + "Z",
            "endedAt": (started + timedelta(seconds=42)).isoformat() + "Z",
            "recordingUrl": "https://recordings.example.com/call.wav", "timestamp": utcnow().isoformat() + "Z",
            "summary": "The customer asked about an invoice.", "endedReason": "customer-ended-call",
            "transcript": "AI: Hello.\nUser: Hi, about my invoice.", "callType": "inbound"}
    body.update(fields)
    return {key: value for key, value in body.items() if value is not None}


def call(actor: Actor, **fields) -> str:
    """A call of the actor's workspace, recorded as the webhook records one; its id. ``fields`` are
    the domain Report's (started_at as naive UTC, agent_id, call_type, tags, structured_data...)."""
    from models.calls import Report, ingest
    started = fields.pop("started_at", None) or utcnow() - timedelta(minutes=1)
    duration_ms = fields.pop("duration_ms", 42_000.0)
    values = dict(call_id=str(uuid.uuid4()), workspace_id=actor.workspace_id, started_at=started,
                  ended_at=started + timedelta(milliseconds=duration_ms), duration_ms=duration_ms, agent_id=None,
                  call_type="inbound", status="completed", call_end_reason_category="customer",
                  ended_reason="customer-ended-call", customer="+14155550123", recording_url=None,
                  summary="A call.", transcript="AI: Hello.", sent_at=None, structured_data={}, tags=[], raw={})
    values.update(fields)
    with session():
        return ingest(Report(**values)).call_id


def insight(actor: Actor, name: str = "score", type: str = "number", enum_values: list | None = None,
            agents: list[str] = ()) -> int:
    """A structured-data field of the actor's workspace, assigned to ``agents`` besides their
    other fields; its id."""
    from models.insights import agent_fields, create_field, set_agent_fields
    with session():
        field = create_field(workspace_id=actor.workspace_id, name=name, type=type, enum_values=enum_values)
        for agent_id in agents:
            held = [f.id for f in agent_fields(workspace_id=actor.workspace_id, agent_id=agent_id)]
            set_agent_fields(workspace_id=actor.workspace_id, agent_id=agent_id, field_ids=held + [field.id])
    return field.id


def webhook_subscription(actor: Actor, url: str, events: list[str] = ("end-of-call-report",),
                         enabled: bool = True) -> tuple[str, str]:
    """A webhook subscription of the actor's workspace: its id and its signing secret. The URL is
    checked against the policy the test configured (models.webhook_addresses)."""
    from models.webhook_subscriptions import create
    with session():
        record, secret = create(_principal(actor), workspace_id=actor.workspace_id, url=url, events=list(events),
                                enabled=enabled)
    return record.id, secret
