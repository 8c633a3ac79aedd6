"""Integrations: a workspace's third-party credentials, by kind.

- ``telephony``: a ``provider`` (its name), an ``account`` and the secret;
- ``llm``: an OpenAI-compatible endpoint, ``baseUrl`` and ``model``, the secret its API key; it
  takes the place of the LLM_* settings for the workspace (models.integrations.llm);
- ``crm``: an optional ``baseUrl`` and the secret;
- ``runtime``: where agent and workflow configurations are pushed, ``baseUrl`` and the secret.

A URL passes the outbound webhooks' address rules (models.webhooks.addresses) when it is given.
The secret is encrypted at rest with the operator's key (models.kernel.encryption) and never
read back into an answer: answers show its hint, its last four characters. Rotation replaces it,
and changes the hint and ``rotatedAt``.
"""
from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from models.identity.principal import Principal
from models.kernel import encryption
from models.kernel.db import database, is_postgres, utcnow
from models.kernel.errors import InvalidInput, NotFound
from models.kernel.pagination import Page, workspace_list
from models.kernel.sql import Prepared
from models.kernel.text import text_problem
from models.integrations.tables import Integration
from models.webhooks.addresses import check_url

KINDS = ("telephony", "llm", "crm", "runtime")
NAME_MAX_CHARS = 100
FIELD_MAX_CHARS = 200
SECRET_MIN_CHARS = 8
SECRET_MAX_CHARS = 4096
HINT_CHARS = 4
# What each kind requires besides its name and secret, by the field's name in the domain.
_REQUIRED = {"telephony": ("provider",), "llm": ("base_url", "model"), "crm": (), "runtime": ("base_url",)}
_WIRE = {"base_url": "baseUrl", "model": "model", "provider": "provider", "account_id": "account", "name": "name"}
FIELDS = ("name", "base_url", "model", "provider", "account_id")
UNSET = object()


class IntegrationRecord(NamedTuple):
    id: str
    workspace_id: str
    kind: str
    name: str
    base_url: str | None
    model: str | None
    provider: str | None
    account_id: str | None
    secret_hint: str
    created_by: str
    created_at: datetime
    updated_at: datetime
    rotated_at: datetime | None


_I = Integration
_COLUMNS = (_I.id, _I.workspace, _I.kind, _I.name, _I.base_url, _I.model, _I.provider, _I.account_id, _I.secret_hint,
            _I.created_by, _I.created_at, _I.updated_at, _I.rotated_at)
_ONE = Prepared(lambda workspace_id, integration_id: _I.in_workspace(workspace_id, *_COLUMNS)
                .where(_I.id == integration_id))
_PAGES = {
    False: workspace_list(_I, _COLUMNS, order_by=(_I.created_at, _I.id)),
    True: workspace_list(_I, _COLUMNS, order_by=(_I.created_at, _I.id), names=("kind",),
                         where=lambda params: [_I.kind == params["kind"]]),
}


def _text(value, field: str, max_chars: int) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be text.")
    if problem := text_problem(value):
        raise InvalidInput(f"{field} {problem}.")
    value = value.strip()
    if not 1 <= len(value) <= max_chars:
        raise InvalidInput(f"{field} must be 1 to {max_chars} characters once trimmed; {len(value)} given.")
    return value


def _column(field: str, value) -> str | None:
    if value is None:
        return None
    if field == "base_url":
        return check_url(_text(value, "baseUrl", 2048).rstrip("/"), "baseUrl")
    return _text(value, _WIRE[field], NAME_MAX_CHARS if field == "name" else FIELD_MAX_CHARS)


def _secret(value) -> str:
    if not isinstance(value, str) or not SECRET_MIN_CHARS <= len(value) <= SECRET_MAX_CHARS:
        raise InvalidInput(f"secret must be text of {SECRET_MIN_CHARS} to {SECRET_MAX_CHARS} characters.")
    # It goes out as an Authorization header's value, which carries ASCII only.
    if not value.isascii() or not value.isprintable():
        raise InvalidInput("secret must be one line of printable ASCII characters: it is sent in an Authorization "
                           "header.")
    return value


def hint(secret: str) -> str:
    """What answers show of a secret: its last four characters after an ellipsis."""
    return "…" + secret[-HINT_CHARS:]


def _check_kind(kind: str, columns: dict) -> None:
    for field in _REQUIRED[kind]:
        if not columns.get(field):
            raise InvalidInput(f"A {kind} integration needs {_WIRE[field]}.")


def create(principal: Principal, *, workspace_id: str, kind: str, name: str, secret: str, base_url=None,
           model=None, provider=None, account_id=None) -> IntegrationRecord:
    """A new integration of the workspace, its secret encrypted."""
    if kind not in KINDS:
        raise InvalidInput(f"kind must be one of {', '.join(KINDS)}.")
    columns = {field: _column(field, value) for field, value in
               {"name": name, "base_url": base_url, "model": model, "provider": provider,
                "account_id": account_id}.items()}
    if columns["name"] is None:
        raise InvalidInput("name is required.")
    _check_kind(kind, columns)
    secret = _secret(secret)
    now = utcnow()
    with database.atomic():
        row = _I.create(workspace=workspace_id, kind=kind, secret=encryption.encrypt(secret), secret_hint=hint(secret),
                        created_by=principal.user_id, created_at=now, updated_at=now, **columns)
    return get(workspace_id=workspace_id, integration_id=row.id)


def list_integrations(*, workspace_id: str, limit: int, offset: int, kind: str | None = None
                      ) -> Page[IntegrationRecord]:
    """The workspace's integrations, oldest first, of one ``kind`` when given. One statement per page."""
    values = {} if kind is None else {"kind": kind}
    return _PAGES[kind is not None].page(IntegrationRecord, workspace_id=workspace_id, limit=limit, offset=offset,
                                         **values)


def get(*, workspace_id: str, integration_id: str) -> IntegrationRecord:
    record = _ONE.first(IntegrationRecord, workspace_id=workspace_id, integration_id=integration_id)
    if record is None:
        raise NotFound(f"No integration {integration_id} in this workspace.")
    return record


def update(*, workspace_id: str, integration_id: str, **changes) -> IntegrationRecord:
    """The fields given (by their names in ``FIELDS``; None clears an optional one), under the rules
    of a new integration of its kind. The secret changes only by ``rotate``."""
    if unknown := set(changes) - set(FIELDS):
        raise TypeError(f"unknown integration fields: {sorted(unknown)}")
    if not changes:
        raise InvalidInput("Give at least one field to change.")
    columns = {field: _column(field, value) for field, value in changes.items()}
    if "name" in columns and columns["name"] is None:
        raise InvalidInput("name is required; it cannot be cleared.")
    with database.atomic():
        query = _I.in_workspace(workspace_id, *_COLUMNS).where(_I.id == integration_id)
        current = (query.for_update() if is_postgres() else query).tuples().first()
        if current is None:
            raise NotFound(f"No integration {integration_id} in this workspace.")
        record = IntegrationRecord._make(current)
        _check_kind(record.kind, {field: getattr(record, field) for field in FIELDS} | columns)
        _I.update(updated_at=utcnow(), **columns).where(_I.id == integration_id).execute()
    return get(workspace_id=workspace_id, integration_id=integration_id)


def rotate(*, workspace_id: str, integration_id: str, secret: str) -> IntegrationRecord:
    """The new ``secret`` in place of the old one: the hint and ``rotated_at`` change with it."""
    secret = _secret(secret)
    now = utcnow()
    with database.atomic():
        if not _I.update(secret=encryption.encrypt(secret), secret_hint=hint(secret), rotated_at=now, updated_at=now
                         ).where((_I.workspace == workspace_id) & (_I.id == integration_id)).execute():
            raise NotFound(f"No integration {integration_id} in this workspace.")
    return get(workspace_id=workspace_id, integration_id=integration_id)


def delete(*, workspace_id: str, integration_id: str) -> None:
    with database.atomic():
        if not _I.delete().where((_I.workspace == workspace_id) & (_I.id == integration_id)).execute():
            raise NotFound(f"No integration {integration_id} in this workspace.")


def secret_of(*, workspace_id: str, integration_id: str) -> str:
    """The integration's secret in clear, for a request to its third party only (never an answer)."""
    row = _I.in_workspace(workspace_id, _I.secret).where(_I.id == integration_id).tuples().first()
    if row is None:
        raise NotFound(f"No integration {integration_id} in this workspace.")
    return encryption.decrypt(row[0])


class Probe(NamedTuple):
    """The request that tests an integration's connection: a GET with its secret as a bearer token."""
    url: str
    headers: dict


def probe(*, workspace_id: str, integration_id: str) -> Probe | str:
    """What testing the integration asks: an llm endpoint's ``GET {baseUrl}/models``, another
    kind's ``GET {baseUrl}``; for one without a baseUrl, the sentence saying there is nothing to ask."""
    record = get(workspace_id=workspace_id, integration_id=integration_id)
    if record.base_url is None:
        return f"This {record.kind} integration has no baseUrl: there is no connection to test."
    url = record.base_url + "/models" if record.kind == "llm" else record.base_url
    secret = secret_of(workspace_id=workspace_id, integration_id=integration_id)
    return Probe(url, {"authorization": f"Bearer {secret}", "accept": "application/json",
                       "user-agent": "voice-agent-backend-integrations/1"})
