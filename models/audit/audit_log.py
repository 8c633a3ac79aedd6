"""The audit log: who changed what in a workspace, when, from where.

Every operation of the contract that changes something (each method but GET) is recorded once
it has succeeded, by the API layer (api.audit_trail), which knows the request; the domain records
what no request asks for (the periodic retention purge). Entries are only ever inserted: no
operation of the API updates or deletes one; they go with their workspace.

An entry names its actor by user and credential id (never a secret), the operationId, the
resource's type and id, the request id and the source address, and a summary of the fields the
request set, secret values replaced (``summarize``).
"""
from __future__ import annotations

import functools
import re
from datetime import datetime
from typing import NamedTuple

from models.audit.tables import AuditEntry
from models.kernel.db import utcnow
from models.kernel.pagination import Page, PageQuery, workspace_list


class AuditRecord(NamedTuple):
    id: int
    workspace_id: str
    occurred_at: datetime
    actor_user_id: str | None
    actor_credential_id: str | None
    actor_kind: str
    operation_id: str
    resource_type: str
    resource_id: str | None
    request_id: str | None
    source_address: str | None
    changes: dict


class Actor(NamedTuple):
    user_id: str | None
    credential_id: str | None
    kind: str


SYSTEM = Actor(None, None, "system")


def record(*, workspace_ids, actor: Actor, operation_id: str, resource_type: str, resource_id: str | None,
           changes: dict, request_id: str | None = None, source_address: str | None = None,
           now: datetime | None = None) -> None:
    """One entry in each of ``workspace_ids`` (one insert statement)."""
    now = now or utcnow()
    rows = [{"workspace": workspace_id, "occurred_at": now, "actor_user_id": actor.user_id,
             "actor_credential_id": actor.credential_id, "actor_kind": actor.kind, "operation_id": operation_id,
             "resource_type": resource_type, "resource_id": None if resource_id is None else str(resource_id)[:255],
             "request_id": request_id, "source_address": source_address, "changes": changes}
            for workspace_id in dict.fromkeys(workspace_ids)]
    if rows:
        AuditEntry.insert_many(rows).execute()


# What a field's name says it holds: its value never goes into the log.
_SECRET_NAME = re.compile(r"secret|token|password|passphrase|credential|(^|[a-z_])key$", re.IGNORECASE)
REDACTED = "[redacted]"
_MAX_TEXT = 200
_MAX_ITEMS = 20
_MAX_DEPTH = 3


def summarize(values: dict) -> dict:
    """The fields a request set, for an entry: secrets replaced by ``[redacted]``, long text cut,
    long lists and deep objects shortened, so that an entry stays small whatever was sent."""
    return _summary(values, 0) if isinstance(values, dict) else {}


def _summary(value, depth: int):
    if isinstance(value, dict):
        if depth >= _MAX_DEPTH:
            return f"[object of {len(value)} fields]"
        items = list(value.items())
        shown = {str(k)[:100]: (REDACTED if _SECRET_NAME.search(str(k)) and v is not None else _summary(v, depth + 1))
                 for k, v in items[:_MAX_ITEMS]}
        if len(items) > _MAX_ITEMS:
            shown["..."] = f"{len(items) - _MAX_ITEMS} more fields"
        return shown
    if isinstance(value, list):
        if depth >= _MAX_DEPTH:
            return f"[list of {len(value)} items]"
        shown = [_summary(v, depth + 1) for v in value[:_MAX_ITEMS]]
        if len(value) > _MAX_ITEMS:
            shown.append(f"... {len(value) - _MAX_ITEMS} more items")
        return shown
    if isinstance(value, str) and len(value) > _MAX_TEXT:
        return value[:_MAX_TEXT] + f"... ({len(value)} characters)"
    if isinstance(value, (bytes, bytearray)):
        return f"[{len(value)} bytes]"
    return value


_A = AuditEntry
_COLUMNS = (_A.id, _A.workspace, _A.occurred_at, _A.actor_user_id, _A.actor_credential_id, _A.actor_kind,
            _A.operation_id, _A.resource_type, _A.resource_id, _A.request_id, _A.source_address, _A.changes)
_FILTERS = {
    "actor_user_id": lambda v: _A.actor_user_id == v,
    "actor_credential_id": lambda v: _A.actor_credential_id == v,
    "operation_id": lambda v: _A.operation_id == v,
    "resource_type": lambda v: _A.resource_type == v,
    "resource_id": lambda v: _A.resource_id == v,
    "since": lambda v: _A.occurred_at >= v,
    "until": lambda v: _A.occurred_at < v,
}


@functools.cache
def _page(names: tuple[str, ...]) -> PageQuery:
    """The list for one set of filters, compiled once, newest first."""
    return workspace_list(_A, _COLUMNS, order_by=(_A.occurred_at.desc(), _A.id.desc()), names=names,
                          where=lambda params: [_FILTERS[name](params[name]) for name in names])


def list_entries(*, workspace_id: str, limit: int, offset: int, **filters) -> Page[AuditRecord]:
    """``filters``: any of actor_user_id, actor_credential_id, operation_id, resource_type,
    resource_id, since, until (naive UTC; since inclusive, until exclusive); None is no filter."""
    values = {name: value for name, value in filters.items() if value is not None}
    for name in ("since", "until"):
        if name in values:  # as stored, so SQLite compares text with text
            values[name] = _A.occurred_at.db_value(values[name])
    if unknown := set(values) - set(_FILTERS):
        raise TypeError(f"unknown audit filters: {unknown}")
    names = tuple(sorted(values))
    return _page(names).page(AuditRecord, workspace_id=workspace_id, limit=limit, offset=offset, **values)
