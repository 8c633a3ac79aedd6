"""Control requests to a running call: a transfer, a resume, a message injected into the
conversation. This service carries no audio: each request is stored, and the call's runtime takes
it either way:

- pushed: a ``call.control`` event for each enabled webhook subscription of the workspace that
  takes that kind, enqueued in the transaction that stores the request (models.webhooks.outbox),
  signed and retried as every outbound event is;
- pulled: a claim of the workspace's oldest pending requests marks them delivered in one UPDATE
  (models.kernel.leases: SKIP LOCKED on PostgreSQL, so that two runtimes claiming at once take
  different requests).

The runtime acknowledges each (delivered, done or failed) along the legal moves
(models.live_calls.lifecycle); a request pushed and not yet acknowledged is still pending, so a
runtime that both subscribes and claims acknowledges ``delivered`` first. A call that ends fails
the requests still pending (models.live_calls.calls).
"""
from __future__ import annotations

import functools
from datetime import datetime
from typing import NamedTuple

from models.configs.tables import Agent
from models.identity.principal import Principal
from models.kernel.db import after_commit, database, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.leases import LeasedWork
from models.kernel.pagination import Page, PageQuery, workspace_list
from models.kernel.sql import Prepared, Statement
from models.live_calls import calls, lifecycle
from models.live_calls.lifecycle import DELIVERED, DONE, FAILED, PENDING
from models.live_calls.tables import LiveCallControl
from models.telephony import e164
from models.webhooks import outbox

KINDS = ("transfer", "resume", "message")
MESSAGE_ROLES = ("system", "user", "assistant")
MESSAGE_MAX_CHARS = 2000
ERROR_MAX_CHARS = 1000
CLAIM_MAX = 100
EVENT_TYPE = "call.control"


class ControlRecord(NamedTuple):
    id: str
    workspace_id: str
    call_id: str
    kind: str
    request: dict
    state: str
    error: str | None
    created_by: str
    created_at: datetime
    delivered_at: datetime | None
    completed_at: datetime | None
    updated_at: datetime


_C = LiveCallControl
_COLUMNS = tuple(getattr(_C, name if name != "workspace_id" else "workspace") for name in ControlRecord._fields)


# --- what a request asks ----------------------------------------------------------------------

def transfer_request(workspace_id: str, destination: dict) -> dict:
    """A transfer's destination as stored: a number in E.164, or an agent of the workspace;
    InvalidInput naming the field otherwise."""
    if destination.get("type") == "number":
        return {"destination": {"type": "number",
                                "number": e164.normalise(destination.get("number"), field="destination.number")}}
    if destination.get("type") == "agent":
        agent_id = destination.get("agentId")
        if not isinstance(agent_id, str) or not Agent.in_workspace(workspace_id).where(Agent.id == agent_id).exists():
            raise InvalidInput(f"destination.agentId: no agent {agent_id} in this workspace.")
        return {"destination": {"type": "agent", "agentId": agent_id}}
    raise InvalidInput("destination.type must be number (with number) or agent (with agentId).")


def message_request(role: str | None, content: str) -> dict:
    """A message to inject: its role (system by default: an instruction to the agent) and its
    content, trimmed, 1 to MESSAGE_MAX_CHARS characters."""
    role = role or "system"
    if role not in MESSAGE_ROLES:
        raise InvalidInput(f"role must be one of {', '.join(MESSAGE_ROLES)}.")
    text = content.strip()
    if not 1 <= len(text) <= MESSAGE_MAX_CHARS:
        raise InvalidInput(f"content must be 1 to {MESSAGE_MAX_CHARS} characters once trimmed; {len(text)} given.")
    return {"role": role, "content": text}


# --- storing one --------------------------------------------------------------------------------

_INSERT = Statement("""INSERT INTO live_call_control (id, workspace_id, live_call_id, call_id, kind, request, state,
                                                      created_by, created_at, updated_at)
                       VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p})""")
_json = LiveCallControl.request.db_value
_stamp = LiveCallControl.created_at.db_value


def request_control(principal: Principal, *, workspace_id: str, call_id: str, kind: str, request: dict,
                    now: datetime | None = None) -> ControlRecord:
    """A pending control request to the call, with its ``call.control`` events, in one transaction;
    Conflict unless the call is in progress (in-progress or forwarding). The call's row is held
    (PostgreSQL: FOR SHARE) until the request commits, so that a call ending meanwhile fails it
    rather than leaving it pending."""
    if kind not in KINDS:
        raise InvalidInput(f"kind must be one of {', '.join(KINDS)}.")
    now = now or utcnow()
    with database.atomic():
        live = calls.require(workspace_id, call_id, lock="share")
        if live.status not in lifecycle.CONTROLLABLE:
            raise _not_controllable(live.status)
        control_id = LiveCallControl.id.default()
        _INSERT.execute(control_id, workspace_id, live.id, call_id, kind, _json(request), PENDING, principal.user_id,
                        _stamp(now), _stamp(now))
        payload = {"type": EVENT_TYPE, "workspaceId": workspace_id, "callId": call_id, "controlId": control_id,
                   "kind": kind, "request": request, "createdAt": now.isoformat(timespec="milliseconds") + "Z"}
        if outbox.enqueue_call(workspace_id=workspace_id, call_id=None, payload=payload, event_type=EVENT_TYPE,
                               now=now):
            after_commit(outbox.notify_enqueued)
    return get_control(workspace_id=workspace_id, call_id=call_id, control_id=control_id)


def _not_controllable(status: str) -> Conflict:
    return Conflict(f"The call is {status}; control requests need a call in progress (in-progress or forwarding).",
                    result={"status": status})


# --- the runtime's side ---------------------------------------------------------------------------

# The workspace's oldest pending requests, along (workspace_id, state, created_at, id).
_CLAIM = LeasedWork(
    table=LiveCallControl._meta.table_name, key="id",
    due=f"w.workspace_id = {{p}} AND w.state = '{PENDING}'",
    order="w.workspace_id, w.state, w.created_at, w.id",
    claim_sets=f"state = '{DELIVERED}', delivered_at = {{p}}, updated_at = {{p}}",
    returning=", ".join(field.column_name for field in _COLUMNS),
    token="state")


def claim(*, workspace_id: str, count: int, now: datetime | None = None) -> list[ControlRecord]:
    """Up to ``count`` (1 to CLAIM_MAX) of the workspace's pending requests, oldest first, marked
    delivered: one statement; two claimers at once get different requests."""
    if not 1 <= count <= CLAIM_MAX:
        raise InvalidInput(f"count must be 1 to {CLAIM_MAX}; {count} given.")
    now = now or utcnow()
    rows = _CLAIM.claim_many(count, _stamp(now), _stamp(now), workspace_id)
    converters = [field.python_value for field in _COLUMNS]
    records = [ControlRecord(*(convert(value) for convert, value in zip(converters, row))) for row in rows]
    return sorted(records, key=lambda record: (record.created_at, record.id))


@functools.cache
def _ack_statement(state: str) -> Statement:
    completed = ", completed_at = {p}" if state in (DONE, FAILED) else ""
    return Statement(f"UPDATE live_call_control SET state = {{p}}, error = {{p}}, updated_at = {{p}}, "
                     f"delivered_at = COALESCE(delivered_at, {{p}}){completed} WHERE id = {{p}} AND state = {{p}}")


def acknowledge(*, workspace_id: str, call_id: str, control_id: str, state: str, error: str | None = None,
                now: datetime | None = None) -> tuple[ControlRecord, bool]:
    """The request moved to ``state`` by its runtime (False: it is in that state already, and
    nothing changed); Conflict naming its state and the moves it allows unless the move is legal.
    ``error`` says why a request failed, and goes with ``failed`` only."""
    if state not in lifecycle.CONTROL_STATES or state == PENDING:
        raise InvalidInput("state must be one of delivered, done, failed.")
    if error is not None and state != FAILED:
        raise InvalidInput("error goes with state failed only.")
    if error is not None and not 1 <= len(error.strip()) <= ERROR_MAX_CHARS:
        raise InvalidInput(f"error must be 1 to {ERROR_MAX_CHARS} characters once trimmed.")
    now = now or utcnow()
    with database.atomic():
        record = get_control(workspace_id=workspace_id, call_id=call_id, control_id=control_id)
        while record.state != state:
            lifecycle.check_control_move(record.state, state)
            extra = (_stamp(now),) if state in (DONE, FAILED) else ()
            if _ack_statement(state).execute(state, error and error.strip(), _stamp(now), _stamp(now), *extra,
                                             control_id, record.state).rowcount:
                return get_control(workspace_id=workspace_id, call_id=call_id, control_id=control_id), True
            # Moved by another meanwhile (a claim, the call's end): judged by what it is now.
            record = get_control(workspace_id=workspace_id, call_id=call_id, control_id=control_id)
    return record, False


# --- reading ------------------------------------------------------------------------------------

_ONE = Prepared(lambda workspace_id, call_id, control_id: _C.in_workspace(workspace_id, *_COLUMNS)
                .where((_C.id == control_id) & (_C.call_id == call_id)))


def get_control(*, workspace_id: str, call_id: str, control_id: str) -> ControlRecord:
    record = _ONE.first(ControlRecord, workspace_id=workspace_id, call_id=call_id, control_id=control_id)
    if record is None:
        calls.require(workspace_id, call_id)
        raise NotFound(f"No control request {control_id} of call {call_id} in this workspace.")
    return record


@functools.cache
def _controls_page(names: tuple[str, ...]) -> PageQuery:
    return workspace_list(_C, _COLUMNS, order_by=(_C.created_at.desc(), _C.id.desc()), names=("live_call_id", *names),
                          where=lambda params: [_C.live_call == params["live_call_id"],
                                                *(_C.state == params[name] for name in names)])


def list_controls(*, workspace_id: str, call_id: str, limit: int, offset: int,
                  state: str | None = None) -> Page[ControlRecord]:
    """The call's control requests, newest first (404 without the call): two statements."""
    live = calls.require(workspace_id, call_id)
    values = {"state": state} if state is not None else {}
    return _controls_page(tuple(values)).page(ControlRecord, workspace_id=workspace_id, limit=limit, offset=offset,
                                              live_call_id=live.id, **values)
