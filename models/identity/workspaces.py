"""Workspaces: the caller's list, creation (the creator is its owner), settings, and deletion.

Deleting a workspace deletes everything of it in one transaction: every table that holds a
workspace's rows references it ``ON DELETE CASCADE`` (models.migrations), then its recordings'
directory goes from DATA_DIR once the transaction has committed.
"""
from __future__ import annotations

import zoneinfo
from datetime import datetime
from typing import NamedTuple

from peewee import fn

from models.calls import recordings
from models.exports import exports
from models.identity.principal import Principal
from models.identity.tables import Membership, User
from models.kernel.db import database, utcnow
from models.kernel.errors import Conflict, Forbidden, InvalidInput, NotFound
from models.kernel.pagination import Page, PageQuery
from models.kernel.scoping import Workspace
from models.kernel.sql import Prepared
from models.speech import filter as speech_filter

MAX_OWNED_PER_USER = 100
NAME_MAX_CHARS = 200
MAX_RETENTION_DAYS = 3650
DEFAULT_SETTINGS = {
    "timeZone": "UTC",
    "defaultLanguage": "en",
    "webhookDefaults": {"events": ["end-of-call-report"]},
    "sttDefaults": {"language": None, "prompt": None},
    # Every member signs in with a second factor (models.identity.sign_in): one without enrols one first.
    "requireMfa": False,
    # Calls imported from a file (POST /call/import) happened elsewhere, where they were paid for.
    "debitImportedCalls": False,
    # Masks of profanity and personal data in transcripts (models.speech.filter); off by default.
    "speechFilter": speech_filter.DEFAULT_SETTINGS,
}


class WorkspaceRecord(NamedTuple):
    id: str
    name: str
    settings: dict
    data_retention_days: int | None
    credit_balance: int
    created_at: datetime
    updated_at: datetime | None
    role: str | None  # the caller's, where the read is the caller's


_W, _M = Workspace, Membership
_COLUMNS = (_W.id, _W.name, _W.settings, _W.data_retention_days, _W.credit_balance, _W.created_at, _W.updated_at)
_ONE = Prepared(lambda workspace_id: _W.select(*_COLUMNS, _W.id.alias("role")).where(_W.id == workspace_id))
_MINE = PageQuery(
    lambda user_id, limit, offset: _W.select(*_COLUMNS, _M.role).join(_M, on=(_M.workspace == _W.id))
    .where(_M.user == user_id).order_by(_M.created_at, _W.id).limit(limit).offset(offset),
    lambda user_id: _M.select(fn.COUNT(_M.id)).where(_M.user == user_id))


def _record(row: WorkspaceRecord, role: str | None) -> WorkspaceRecord:
    return row._replace(settings={**DEFAULT_SETTINGS, **(row.settings or {})}, role=role)


def list_mine(principal: Principal, *, limit: int, offset: int) -> Page[WorkspaceRecord]:
    require_user_credential(principal, "Listing the caller's workspaces")
    page = _MINE.page(WorkspaceRecord, user_id=principal.user_id, limit=limit, offset=offset)
    return page.__class__(items=[_record(w, w.role) for w in page.items], total=page.total,
                          limit=page.limit, offset=page.offset)


def get(workspace_id: str, *, role: str | None = None) -> WorkspaceRecord:
    row = _ONE.first(WorkspaceRecord, workspace_id=workspace_id)
    if row is None:
        raise NotFound(f"No workspace {workspace_id}.")
    return _record(row, role)


def role_of(workspace_id: str, user_id: str) -> str | None:
    return _M.select(_M.role).where((_M.workspace == workspace_id) & (_M.user == user_id)).scalar()


def _name(name: str) -> str:
    name = name.strip()
    if not 1 <= len(name) <= NAME_MAX_CHARS:
        raise InvalidInput(f"name must be 1 to {NAME_MAX_CHARS} characters once trimmed; {len(name)} given.")
    return name


def require_user_credential(principal: Principal, what: str) -> None:
    """What a person does for themselves across workspaces takes their access token: an API key
    belongs to one workspace and holds a frozen subset of permissions, so it may not reach further."""
    if principal.kind != "access_token":
        raise Forbidden(f"{what} needs an access token; an API key acts in its own workspace only.")


def create(principal: Principal, *, name: str, settings: dict | None = None) -> WorkspaceRecord:
    require_user_credential(principal, "Creating a workspace")
    name = _name(name)
    stored, retention = _settings({}, settings or {})
    with database.atomic():
        # The user's row orders concurrent creations of one user, so that the cap holds.
        User.update(id=User.id).where(User.id == principal.user_id).execute()
        owned = _M.select().where((_M.user == principal.user_id) & (_M.role == "owner")).count()
        if owned >= MAX_OWNED_PER_USER:
            raise Conflict(f"A user owns at most {MAX_OWNED_PER_USER} workspaces; delete one first.")
        now = utcnow()
        workspace = Workspace.create(name=name, settings=stored, data_retention_days=retention, created_at=now,
                                     updated_at=now)
        Membership.create(workspace=workspace, user=principal.user_id, role="owner", created_at=now)
    return get(workspace.id, role="owner")


def _settings(current: dict, changes: dict) -> tuple[dict, int | None]:
    """The stored settings with ``changes`` (wire names) merged in, and the retention days."""
    merged = {**DEFAULT_SETTINGS, **current}
    for key in ("timeZone", "defaultLanguage", "requireMfa", "debitImportedCalls"):
        if key in changes:
            merged[key] = changes[key]
    for key in ("webhookDefaults", "sttDefaults"):
        if key in changes:
            merged[key] = {**merged[key], **changes[key]}
    if "speechFilter" in changes:
        merged["speechFilter"] = speech_filter.settings(changes["speechFilter"], merged["speechFilter"])
    if merged["timeZone"] not in _time_zones():
        raise InvalidInput(f"settings.timeZone must be an IANA time zone such as Europe/Paris; "
                           f"{merged['timeZone']!r} is not one.")
    retention = changes.get("dataRetentionDays", current.get("dataRetentionDays"))
    if retention is not None and not 1 <= retention <= MAX_RETENTION_DAYS:
        raise InvalidInput(f"settings.dataRetentionDays must be from 1 to {MAX_RETENTION_DAYS}, or null to keep calls.")
    merged.pop("dataRetentionDays", None)
    return merged, retention


_zones: frozenset[str] | None = None


def _time_zones() -> frozenset[str]:
    global _zones
    if _zones is None:
        _zones = frozenset(zoneinfo.available_timezones()) | {"UTC"}
    return _zones


def update(*, workspace_id: str, name: str | None = None, settings: dict | None = None) -> WorkspaceRecord:
    with database.atomic():
        current = get(workspace_id)
        changes = {"updated_at": utcnow()}
        if name is not None:
            changes["name"] = _name(name)
        if settings is not None:
            stored, retention = _settings({**current.settings, "dataRetentionDays": current.data_retention_days},
                                          settings)
            changes.update(settings=stored, data_retention_days=retention)
        Workspace.update(**changes).where(Workspace.id == workspace_id).execute()
    return get(workspace_id)


def delete(principal: Principal, *, workspace_id: str, confirm_name: str) -> str:
    """Everything of the workspace; returns its name. Only an owner, who types the name back."""
    with database.atomic():
        # The row locked first: a concurrent deletion (or role change) that committed meanwhile is seen.
        if not Workspace.update(id=Workspace.id).where(Workspace.id == workspace_id).execute():
            raise NotFound(f"No workspace {workspace_id}.")
        workspace = get(workspace_id)
        if role_of(workspace_id, principal.user_id) != "owner":
            raise Forbidden("Only an owner of the workspace may delete it.")
        if confirm_name != workspace.name:
            raise InvalidInput("confirmName must repeat the workspace's name exactly, to confirm the deletion.")
        Workspace.delete().where(Workspace.id == workspace_id).execute()
    recordings.delete_workspace_files(workspace_id)
    exports.delete_workspace_files(workspace_id)
    return workspace.name
