"""Syncs: a version of an agent's or a workflow's configuration pushed to the workspace's agent
runtime (a ``runtime`` integration: its baseUrl, its secret as a bearer token), by a leased job.

Starting a sync checks what it names (the entity, its version: the live one unless a number is
given, a runtime integration of the workspace with a baseUrl) and queues it. A worker claims the
most overdue sync (models.kernel.leases), leasing it for longer than an attempt can last and adding
one to its attempts, the claim's token; it reads the version's configuration and the integration's
secret (``payload``), POSTs them once (api.sync_worker) and stores the outcome under that token
(``record``): succeeded on a 2xx; failed at once on a 4xx or a 3xx (the runtime refused it: sending
it again changes nothing) or an address the outbound rules refuse; otherwise (no connection, no
answer in time, a 5xx) queued again after a backoff with full jitter, and failed with the last
reason after MAX_ATTEMPTS. A worker that dies leaves its lease to run out: the sync is due again
then, and an outcome stored under the stale token changes nothing.

What a sync names are plain ids, not foreign keys: a sync outlives an agent deleted meanwhile, and
ends failed saying so (its attempt finds no configuration to push); its entity's syncs stay
readable by the entity's id until the workspace goes.
"""
from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import NamedTuple

from models.configs.entities import kind
from models.configs.tables import Version, VersionedEntity
from models.configs.versioning import require_entity
from models.identity.principal import Principal
from models.integrations import integrations
from models.integrations.tables import Integration
from models.kernel import encryption
from models.kernel.db import after_commit, database, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.leases import LeasedWork, announce_due, backoff_s
from models.kernel.pagination import Page, workspace_list
from models.kernel.sql import Prepared
from models.syncs.tables import ConfigSync
from models.webhooks.outbox import Outcome

STATUSES = ("queued", "running", "succeeded", "failed")
# Attempts in all (failed ones retried, and claims whose worker died) before a sync fails.
MAX_ATTEMPTS = 5
MAX_BACKOFF_S = 300.0
RUNTIME_KIND = "runtime"
TABLE = ConfigSync._meta.table_name

_S = ConfigSync


class SyncRecord(NamedTuple):
    id: str
    workspace_id: str
    entity_type: str
    entity_id: str
    version_id: str
    version_number: int
    integration_id: str
    status: str
    attempts: int
    response_status: int | None
    response_body: str | None
    response_latency_ms: float | None
    error: str | None
    requested_by: str
    created_at: datetime
    finished_at: datetime | None


_COLUMNS = (_S.id, _S.workspace, _S.entity_type, _S.entity_id, _S.version_id, _S.version_number, _S.integration_id,
            _S.status, _S.attempts, _S.response_status, _S.response_body, _S.response_latency_ms, _S.error,
            _S.requested_by, _S.created_at, _S.finished_at)
_ONE = Prepared(lambda workspace_id, entity_type, entity_id, sync_id: _S.in_workspace(workspace_id, *_COLUMNS).where(
    (_S.entity_type == entity_type) & (_S.entity_id == entity_id) & (_S.id == sync_id)))
_ORDER = (_S.created_at.desc(), _S.id.desc())
_PAGES = {
    False: workspace_list(_S, _COLUMNS, order_by=_ORDER, names=("entity_type", "entity_id"),
                          where=lambda p: [_S.entity_type == p["entity_type"], _S.entity_id == p["entity_id"]]),
    True: workspace_list(_S, _COLUMNS, order_by=_ORDER, names=("entity_type", "entity_id", "status"),
                         where=lambda p: [_S.entity_type == p["entity_type"], _S.entity_id == p["entity_id"],
                                          _S.status == p["status"]]),
}


# --- the API's side ------------------------------------------------------------------------------

def _version(model: type[VersionedEntity], workspace_id: str, entity_id: str, number: int | None) -> tuple[str, int]:
    """The id and number of the version to push: number ``number``, or the live one."""
    if number is None:
        row = (model.in_workspace(workspace_id, model.published_version_id).where(model.id == entity_id)
               .tuples().first())
        if row is None:
            raise NotFound(f"No {model.label()} {entity_id} in this workspace.")
        if row[0] is None:
            raise Conflict(f"The {model.label()} has no live version: publish one, or name the version to sync.")
        where = Version.id == row[0]
    else:
        require_entity(model, workspace_id, entity_id)
        where = Version.version_number == number
    found = (Version.in_workspace(workspace_id, Version.id, Version.version_number)
             .where((Version.entity_type == model.KIND) & (Version.entity_id == entity_id) & where).tuples().first())
    if found is None:
        raise NotFound(f"version: the {model.label()} has no version {number}." if number is not None
                       else f"The {model.label()}'s live version is gone; publish one, or name the version to sync.")
    return found


def _runtime(workspace_id: str, integration_id: str) -> None:
    record = integrations.get(workspace_id=workspace_id, integration_id=integration_id)
    if record.kind != RUNTIME_KIND:
        raise InvalidInput(f"integrationId names a {record.kind} integration; a sync is pushed to a "
                           f"{RUNTIME_KIND} integration (its baseUrl and secret).")
    if record.base_url is None:
        raise InvalidInput("integrationId names an integration without a baseUrl: there is nowhere to push to.")


def start(model: type[VersionedEntity], principal: Principal, *, workspace_id: str, entity_id: str,
          integration_id: str, version: int | None = None, now: datetime | None = None) -> SyncRecord:
    """A new sync of the entity's version number ``version`` (its live version when None) to the
    runtime integration, queued. NotFound for an entity, version or integration the workspace does
    not have; Conflict when there is no live version to push; InvalidInput for an integration that
    is no runtime or has no baseUrl."""
    now = now or utcnow()
    version_id, number = _version(model, workspace_id, entity_id, version)
    _runtime(workspace_id, integration_id)
    with database.atomic():
        row = _S.create(workspace=workspace_id, entity_type=model.KIND, entity_id=entity_id, version_id=version_id,
                        version_number=number, integration_id=integration_id, status="queued", attempts=0,
                        next_attempt_at=now, requested_by=principal.user_id, created_at=now, updated_at=now)
    after_commit(lambda: announce_due(TABLE))
    return SyncRecord(row.id, workspace_id, model.KIND, entity_id, version_id, number, integration_id, "queued", 0,
                      None, None, None, None, principal.user_id, now, None)


def list_syncs(model: type[VersionedEntity], *, workspace_id: str, entity_id: str, limit: int, offset: int,
               status: str | None = None) -> Page[SyncRecord]:
    """The entity's syncs, newest first, of one ``status`` when given: one statement per page
    (and one more, whether the entity exists, when the page is empty)."""
    values = {"entity_type": model.KIND, "entity_id": entity_id, **({} if status is None else {"status": status})}
    page = _PAGES[status is not None].page(SyncRecord, workspace_id=workspace_id, limit=limit, offset=offset,
                                           **values)
    if page.total == 0:
        require_entity(model, workspace_id, entity_id)
    return page


def get(model: type[VersionedEntity], *, workspace_id: str, entity_id: str, sync_id: str) -> SyncRecord:
    """One sync of the entity; still there once the entity is deleted."""
    record = _ONE.first(SyncRecord, workspace_id=workspace_id, entity_type=model.KIND, entity_id=entity_id,
                        sync_id=sync_id)
    if record is None:
        raise NotFound(f"No sync {sync_id} of {model.label()} {entity_id} in this workspace.")
    return record


# --- the worker's side ---------------------------------------------------------------------------

class Claimed(NamedTuple):
    sync_id: str
    workspace_id: str
    entity_type: str
    entity_id: str
    version_id: str
    integration_id: str
    attempt: int  # the claim's token: an outcome holds only for it


_JOBS = LeasedWork(
    table=TABLE, key="id", due="w.next_attempt_at <= {p}", order="w.next_attempt_at",
    claim_sets="status = 'running', attempts = attempts + 1, lease_until = {p}, next_attempt_at = {p}, "
               "updated_at = {p}",
    returning="id, workspace_id, entity_type, entity_id, version_id, integration_id, attempts", token="attempts")


def claim(lease_s: float, now: datetime | None = None) -> Claimed | None:
    """The most overdue sync, leased to the caller for ``lease_s`` seconds (due again once that
    runs out, if its worker died), or None."""
    now = now or utcnow()
    until = now + timedelta(seconds=lease_s)
    row = _JOBS.claim(until, until, now, now)
    return None if row is None else Claimed(*row)


class Request(NamedTuple):
    """What one attempt sends: the runtime's URL, the body, the integration's secret."""
    url: str
    body: dict
    secret: str


def payload(job: Claimed) -> Request | str:
    """The attempt's request; or, when there is nothing to push (the entity, its version or the
    integration deleted meanwhile, a secret this server cannot decrypt), the sentence saying why."""
    entity, model = job.entity_type, kind(job.entity_type)
    found = (Version.in_workspace(job.workspace_id, Version.version_number, Version.name, Version.config, model.name)
             .join(model, on=(model.id == Version.entity_id) & (model.workspace == Version.workspace))
             .where((Version.id == job.version_id) & (Version.entity_id == job.entity_id)).tuples().first())
    if found is None:
        return f"The {entity} was deleted before its configuration was pushed: nothing was sent."
    number, version_name, config, name = found
    integration = (Integration.in_workspace(job.workspace_id, Integration.base_url, Integration.secret)
                   .where(Integration.id == job.integration_id).tuples().first())
    if integration is None:
        return "The integration was deleted before the configuration was pushed: nothing was sent."
    base_url, secret = integration
    if base_url is None:
        return "The integration has no baseUrl any more: nothing was sent."
    try:
        secret = encryption.decrypt(secret)
    except encryption.KeyMismatch:
        return ("Not sent: this server cannot decrypt the integration's secret (its SECRET_KEY differs from the "
                "one it was stored with).")
    body = {"syncId": job.sync_id, "workspaceId": job.workspace_id, "entityType": job.entity_type,
            f"{entity}Id": job.entity_id, "name": name, "versionId": job.version_id, "version": number,
            "versionName": version_name, "config": config}
    return Request(base_url, body, secret)


def _mine(job: Claimed):
    return (_S.id == job.sync_id) & (_S.status == "running") & (_S.attempts == job.attempt)


def fail(job: Claimed, error: str, outcome: Outcome | None = None, now: datetime | None = None) -> bool:
    """Failed with ``error``, under the claim's token; False once the sync is no longer this worker's."""
    now = now or utcnow()
    answer = {} if outcome is None else _answer(outcome)
    with database.atomic():
        return bool(_S.update(status="failed", error=error, next_attempt_at=None, lease_until=None, finished_at=now,
                              updated_at=now, **answer).where(_mine(job)).execute())


def _answer(outcome: Outcome) -> dict:
    return {"response_status": outcome.status_code, "response_body": outcome.response_body,
            "response_latency_ms": round(outcome.latency_ms, 3)} if outcome.status_code is not None else \
        {"response_status": None, "response_body": None, "response_latency_ms": None}


def retryable(outcome: Outcome) -> bool:
    """Whether sending again may go otherwise: no connection, no answer in time, a 5xx. A 4xx (or a
    3xx: redirects are not followed) is the runtime's answer to this configuration, and stays so."""
    return outcome.status_code is None or outcome.status_code >= 500


def record(job: Claimed, outcome: Outcome, *, retry_base_s: float, refused: bool = False,
           now: datetime | None = None, rng: random.Random | None = None) -> str | None:
    """The attempt's outcome stored under the claim's token: succeeded; failed (not retryable, an
    address the rules refuse, or the last attempt); else queued again after a backoff. The new
    status, or None once the sync is no longer this worker's."""
    now = now or utcnow()
    if outcome.succeeded:
        with database.atomic():
            changed = _S.update(status="succeeded", error=None, next_attempt_at=None, lease_until=None,
                                finished_at=now, updated_at=now, **_answer(outcome)).where(_mine(job)).execute()
        return "succeeded" if changed else None
    error = outcome.error or f"The runtime answered {outcome.status_code}."
    if refused or not retryable(outcome):
        return "failed" if fail(job, error, outcome, now) else None
    if job.attempt >= MAX_ATTEMPTS:
        return "failed" if fail(job, f"Gave up after {job.attempt} attempts; the last: {error}", outcome, now) \
            else None
    next_at = now + timedelta(seconds=backoff_s(job.attempt, retry_base_s, MAX_BACKOFF_S, rng))
    with database.atomic():
        changed = _S.update(status="queued", error=error, next_attempt_at=next_at, lease_until=None, updated_at=now,
                            **_answer(outcome)).where(_mine(job)).execute()
    return "queued" if changed else None
