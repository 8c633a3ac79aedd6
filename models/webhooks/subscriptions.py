"""Outbound webhook subscriptions: where a workspace's events go, and the secret that signs them.

Each subscription has its own signing secret in the Standard Webhooks form (``whsec_`` and base64),
shown once when it is made or rotated and stored encrypted (models.kernel.encryption), since signing
needs the secret itself. A rotation keeps the secret it replaces signing beside the new one for a
grace period: both signatures go in ``webhook-signature``, as the standard allows, so a receiver
verifies with either while it switches. A second rotation within the grace period ends the first
one's grace (two secrets at most sign at once).

A subscription whose every delivery attempt has failed for FAILING_DISABLE_S (models.webhooks.outbox
tracks ``failing_since``) is disabled, and says why; enabling it again clears that.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import NamedTuple

from peewee import fn

from models.identity.principal import Principal
from models.kernel import encryption
from models.kernel.db import database, is_postgres, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.pagination import Page, PageQuery
from models.kernel.scoping import Workspace
from models.kernel.sql import Prepared
from models.webhooks.addresses import check_url
from models.webhooks.outbox import notify_enqueued, pause, resume

# The inbound signing secrets' grace periods: one convention for both directions.
from models.webhooks.signing_secrets import DEFAULT_GRACE_S, MAX_GRACE_S, new_signing_secret
from models.webhooks.tables import WebhookSubscription

EVENT_TYPES = ("end-of-call-report", "call.control")
MAX_PER_WORKSPACE = 100


class SubscriptionRecord(NamedTuple):
    id: str
    workspace_id: str
    url: str
    events: list[str]
    description: str | None
    enabled: bool
    disabled_reason: str | None
    failing_since: datetime | None
    previous_secret_expires_at: datetime | None
    created_by: str
    created_at: datetime
    updated_at: datetime


_S = WebhookSubscription
_COLUMNS = (_S.id, _S.workspace, _S.url, _S.events, _S.description, _S.enabled, _S.disabled_reason,
            _S.failing_since, _S.previous_secret_expires_at, _S.created_by, _S.created_at, _S.updated_at)
_PAGE = PageQuery(
    lambda workspace_id, limit, offset: _S.in_workspace(workspace_id, *_COLUMNS)
    .order_by(_S.created_at, _S.id).limit(limit).offset(offset),
    lambda workspace_id: _S.in_workspace(workspace_id, fn.COUNT(_S.id)))
_ONE = Prepared(lambda workspace_id, subscription_id: _S.in_workspace(workspace_id, *_COLUMNS)
                .where(_S.id == subscription_id))


def _events(events: list[str]) -> list[str]:
    unknown = [e for e in events if e not in EVENT_TYPES]
    if unknown or not events:
        raise InvalidInput(f"events must list 1 or more of: {', '.join(EVENT_TYPES)}.")
    return list(dict.fromkeys(events))


def create(principal: Principal, *, workspace_id: str, url: str, events: list[str],
           description: str | None = None, enabled: bool = True) -> tuple[SubscriptionRecord, str]:
    """A new subscription and its signing secret, in clear this once."""
    url, events = check_url(url), _events(events)
    secret = new_signing_secret()
    now = utcnow()
    with database.atomic():
        # The workspace's row, written first, orders concurrent creations: the cap holds.
        Workspace.update(id=Workspace.id).where(Workspace.id == workspace_id).execute()
        if _S.in_workspace(workspace_id).count() >= MAX_PER_WORKSPACE:
            raise Conflict(f"A workspace has at most {MAX_PER_WORKSPACE} webhook subscriptions; delete one first.")
        row = _S.create(workspace=workspace_id, url=url, events=events, description=description, enabled=enabled,
                        secret_encrypted=encryption.encrypt(secret), created_by=principal.user_id,
                        created_at=now, updated_at=now)
    return get(workspace_id=workspace_id, subscription_id=row.id), secret


def list_subscriptions(*, workspace_id: str, limit: int, offset: int) -> Page[SubscriptionRecord]:
    return _PAGE.page(SubscriptionRecord, workspace_id=workspace_id, limit=limit, offset=offset)


def get(*, workspace_id: str, subscription_id: str) -> SubscriptionRecord:
    record = _ONE.first(SubscriptionRecord, workspace_id=workspace_id, subscription_id=subscription_id)
    if record is None:
        raise NotFound(f"No webhook subscription {subscription_id} in this workspace.")
    return record


_UNSET = object()


def update(*, workspace_id: str, subscription_id: str, url: str | None = None, events: list[str] | None = None,
           description=_UNSET, enabled: bool | None = None) -> SubscriptionRecord:
    changes: dict = {"updated_at": utcnow()}
    if url is not None:
        changes["url"] = check_url(url)
    if events is not None:
        changes["events"] = _events(events)
    if description is not _UNSET:
        changes["description"] = description
    if enabled is not None:
        changes["enabled"] = enabled
        if enabled:  # a fresh start: the failures that disabled it are behind
            changes.update(disabled_reason=None, failing_since=None)
    with database.atomic():
        if not _S.update(**changes).where((_S.workspace == workspace_id) & (_S.id == subscription_id)).execute():
            raise NotFound(f"No webhook subscription {subscription_id} in this workspace.")
        if enabled is not None:
            (resume if enabled else pause)(subscription_id)
    if enabled:
        notify_enqueued()  # its paused events are due now
    return get(workspace_id=workspace_id, subscription_id=subscription_id)


def delete(*, workspace_id: str, subscription_id: str) -> None:
    """The subscription, its undelivered and delivered events, and their attempts."""
    with database.atomic():
        if not _S.delete().where((_S.workspace == workspace_id) & (_S.id == subscription_id)).execute():
            raise NotFound(f"No webhook subscription {subscription_id} in this workspace.")


def rotate_secret(*, workspace_id: str, subscription_id: str, grace_s: int = DEFAULT_GRACE_S,
                  now: datetime | None = None) -> tuple[SubscriptionRecord, str]:
    """A new signing secret, in clear this once; the current one signs beside it for ``grace_s``
    seconds more (0: it stops now, for a secret that leaked)."""
    if not 0 <= grace_s <= MAX_GRACE_S:
        raise InvalidInput(f"graceSeconds must be 0 to {MAX_GRACE_S}.")
    now = now or utcnow()
    secret = new_signing_secret()
    with database.atomic():
        query = _S.in_workspace(workspace_id, _S.secret_encrypted).where(_S.id == subscription_id)
        # Two rotations at once: the second sees the first's secret as the one it replaces.
        row = (query.for_update() if is_postgres() else query).first()
        if row is None:
            raise NotFound(f"No webhook subscription {subscription_id} in this workspace.")
        _S.update(secret_encrypted=encryption.encrypt(secret), updated_at=now,
                  previous_secret_encrypted=row.secret_encrypted if grace_s else None,
                  previous_secret_expires_at=now + timedelta(seconds=grace_s) if grace_s else None).where(
            _S.id == subscription_id).execute()
    return get(workspace_id=workspace_id, subscription_id=subscription_id), secret


def signing_secrets(workspace_id: str, subscription_id: str, now: datetime | None = None) -> tuple[str, list[str]]:
    """The subscription's URL and the secrets that sign its deliveries now, the current one first."""
    now = now or utcnow()
    row = _SIGNING.first(_Signing, workspace_id=workspace_id, subscription_id=subscription_id)
    if row is None:
        raise NotFound(f"No webhook subscription {subscription_id}.")
    secrets = [encryption.decrypt(row.secret_encrypted)]
    if row.previous_secret_encrypted and row.previous_secret_expires_at and row.previous_secret_expires_at > now:
        secrets.append(encryption.decrypt(row.previous_secret_encrypted))
    return row.url, secrets


class _Signing(NamedTuple):
    url: str
    secret_encrypted: str
    previous_secret_encrypted: str | None
    previous_secret_expires_at: datetime | None


_SIGNING = Prepared(lambda workspace_id, subscription_id: _S.in_workspace(
    workspace_id, _S.url, _S.secret_encrypted, _S.previous_secret_encrypted, _S.previous_secret_expires_at)
    .where(_S.id == subscription_id))
