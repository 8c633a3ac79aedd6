"""What a workspace export holds: every table the workspace owns, found by walking the models, each
written as one NDJSON file, a page of rows at a time.

A table is the workspace's when it is scoped (``WorkspaceScoped``) or carries a ``workspace_id``
column (memberships), or hangs off such a table by a foreign key (the agents of a workflow's
version). Every one is exported unless it is named in ``EXCLUDED_TABLES``, and every column unless
it is named in ``EXCLUDED_COLUMNS``, each with the reason: a secret (a key's or token's hash, an
encrypted value), or a counter or bookkeeping the rest of the export restates. A table added later
is exported by itself; tests/models/test_export_coverage.py fails when one holds a column whose
name looks secret, so that it is classified here (excluded, or named in ``NOT_SECRET``). Customer numbers (``PII_COLUMNS``) are masked as
the calls export masks them (their last four digits) unless the export's starter held calls:pii;
a JSON column that holds them (a report's payload) is left out then.
"""
from __future__ import annotations

import base64
import importlib
import pkgutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

import orjson
from peewee import CompositeKey, ForeignKeyField

import models
from models.calls.export import mask_phone
from models.identity.tables import Membership, User
from models.kernel.db import BaseModel, JSONField
from models.kernel.scoping import Workspace, WorkspaceScoped

# Rows read per statement: a page in memory, never a table.
PAGE_ROWS = 500

# Tables of a workspace left out, and why.
EXCLUDED_TABLES = {
    "signing_secret": "holds nothing but an encrypted signing secret",
    "received_webhook": "the webhook-ids of reports taken in, kept a while against replays",
    "call_count": "a sharded counter of the calls the calls file holds",
    "optimization_run_tally": "a counter of the runs the optimization_run file holds",
    "feedback_counter": "the last feedback number, restated by the feedback file",
    "workspace_export": "the exports themselves: files of this service, not the workspace's data",
}
# Columns left out of a table exported, and why.
EXCLUDED_COLUMNS = {
    ("api_key", "key_hash"): "the digest a key is checked against",
    ("call_share_link", "token_hash"): "the digest a share link's token is checked against",
    ("invitation", "token_hash"): "the digest an invitation's token is checked against",
    ("web_call_token", "token_hash"): "the digest a web-call token is checked against",
    ("webhook_subscription", "secret_encrypted"): "the signing secret, encrypted",
    ("webhook_subscription", "previous_secret_encrypted"): "the rotated signing secret, encrypted",
    ("call", "recording_path"): "where this server keeps the recording's file",
    ("integration", "secret"): "the third-party credential, encrypted",
    ("audio_file", "path"): "where this server keeps the audio file",
}
# Columns exported whose names look secret (tests/models/test_export_coverage.py) but are not.
NOT_SECRET = {
    ("chat_message", "prompt_tokens"), ("chat_message", "completion_tokens"), ("chat_session", "prompt_tokens"),
    ("chat_session", "completion_tokens"), ("simulation", "prompt_tokens"), ("simulation", "completion_tokens"),
    ("simulation_iteration", "prompt_tokens"), ("simulation_iteration", "completion_tokens"),
    ("audit_entry", "actor_credential_id"),  # the id of the key or token that acted, not its secret
    ("membership", "tokens_since"),  # when the member's tokens were last cut off: a time
    ("webhook_subscription", "previous_secret_expires_at"),  # when the rotated secret stops: a time
    ("integration", "secret_hint"),  # its last four characters, as every answer shows them
    ("knowledge_document", "content_hash"),  # the SHA-256 of a document's own bytes, as every answer shows it
}
# Tables that are bases of others, without rows of their own.
_BASES = ("workspace_scoped", "versioned_entity")
# Customer numbers: masked without calls:pii. A JSON column here is left out (None) instead.
PII_COLUMNS = {
    ("call", "customer"), ("call", "payload"), ("campaign_contact", "number"), ("live_call", "from_number"),
    ("live_call", "to_number"), ("suppressed_number", "number"), ("phone_alias", "number"),
    ("webhook_event", "payload"),
}


def _load_tables() -> None:
    # Every domain's tables.py, so that the walk below sees each model whoever imported it first.
    for info in pkgutil.walk_packages(models.__path__, "models."):
        if info.name.endswith(".tables"):
            importlib.import_module(info.name)


_load_tables()


@dataclass(frozen=True)
class Resource:
    """A table exported: its file's name, the model, and how its rows are the workspace's (its own
    workspace column, or the foreign key onto a parent table that has one)."""
    name: str
    model: type[BaseModel]
    parent_key: ForeignKeyField | None = None

    @property
    def file_name(self) -> str:
        return f"{self.name}.ndjson"

    def columns(self) -> list:
        table = self.model._meta.table_name
        return [field for name, field in self.model._meta.columns.items() if (table, name) not in EXCLUDED_COLUMNS]


def all_models() -> list[type[BaseModel]]:
    """Every model with a table of its own."""
    found, stack = [], list(BaseModel.__subclasses__())
    while stack:
        model = stack.pop()
        stack.extend(model.__subclasses__())
        if model._meta.table_name not in _BASES and model not in found:
            found.append(model)
    return sorted(found, key=lambda m: m._meta.table_name)


def _owns(model) -> bool:
    return issubclass(model, WorkspaceScoped) or "workspace_id" in model._meta.columns


def workspace_tables() -> list[Resource]:
    """Every table the workspace owns, exported or excluded: by a workspace column of its own, or
    through a chain of foreign keys onto one that has it."""
    models_ = [m for m in all_models() if m is not Workspace]
    found = {m: Resource(m._meta.table_name, m) for m in models_ if _owns(m)}
    grew = True
    while grew:
        grew = False
        for model in models_:
            if model in found:
                continue
            parent = next((f for f in model._meta.refs if f.rel_model in found), None)
            if parent is not None:
                found[model] = Resource(model._meta.table_name, model, parent)
                grew = True
    return sorted(found.values(), key=lambda r: r.name)


def owned_by_workspace(model, workspace_id: str):
    """The condition that holds ``model``'s rows of the workspace (a table workspace_tables names)."""
    if model is Workspace:
        return Workspace.id == workspace_id
    if model is User:
        return User.id.in_(Membership.select(Membership.user).where(Membership.workspace == workspace_id))
    if _owns(model):
        return model._meta.columns["workspace_id"] == workspace_id
    resource = next(r for r in workspace_tables() if r.model is model)
    parent = resource.parent_key.rel_model
    owned = parent.select(parent._meta.primary_key).where(owned_by_workspace(parent, workspace_id))
    return resource.parent_key.in_(owned)


def exported() -> list[Resource]:
    """The files an export writes: the workspace's own row, its members' users (their email and
    name: a user's credentials are in tables of their own, never exported), then its tables by name."""
    return [Resource("workspace", Workspace), Resource("user", User)] + [
        r for r in workspace_tables() if r.name not in EXCLUDED_TABLES]


def rows(resource: Resource, workspace_id: str, page_rows: int = PAGE_ROWS) -> Iterator[dict]:
    """The resource's rows of the workspace, a page per statement: after the last key read on a
    single-column key, else by offset in key order."""
    model, columns = resource.model, resource.columns()
    key = model._meta.primary_key
    single = not isinstance(key, CompositeKey)
    order = [key] if single else [model._meta.fields[name] for name in key.field_names]
    names = [field.column_name for field in columns]
    condition = owned_by_workspace(resource.model, workspace_id)
    last, offset = None, 0
    while True:
        query = model.select(*columns).where(condition)
        if single and last is not None:
            query = query.where(key > last)
        query = query.order_by(*order).limit(page_rows)
        if not single:
            query = query.offset(offset)
        page = [dict(zip(names, values)) for values in query.tuples()]
        yield from page
        if len(page) < page_rows:
            return
        offset += len(page)
        if single:
            last = page[-1][key.column_name]


def masked(resource: Resource, row: dict, include_pii: bool) -> dict:
    """The row as exported: customer numbers masked unless ``include_pii``."""
    if include_pii:
        return row
    table = resource.model._meta.table_name
    for pii_table, column in PII_COLUMNS:
        if pii_table == table and column in row:
            value = row[column]
            # A number is masked as the calls export masks it; a JSON document holding one is left out.
            is_json = isinstance(resource.model._meta.columns[column], JSONField)
            row[column] = None if is_json or not isinstance(value, str) else mask_phone(value)
    return row


def _default(value):
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (bytes, memoryview)):
        return base64.b64encode(bytes(value)).decode()
    raise TypeError(type(value).__name__)


def ndjson_line(row: dict) -> bytes:
    """One row as one JSON line, its keys the table's column names."""
    return orjson.dumps(row, default=_default, option=orjson.OPT_NAIVE_UTC | orjson.OPT_NON_STR_KEYS) + b"\n"
