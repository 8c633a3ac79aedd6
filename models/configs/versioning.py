"""Versions of a configuration: agents and workflows keep every configuration they ever had.

Nothing is edited in place. Each saved change appends a version; the entity points at the head of
its main line (``head_version_id``, what an editor starts from) and at its published version
(``published_version_id``, the live configuration calls run with). Branches (models.configs.branches)
append versions off the main line that carry their ``branch_id``.

Numbers: ``versionNumber`` counts 1, 2, 3... per entity, branch commits included, with no gap and
no duplicate whatever the concurrency. Every write to an entity's versions or branches starts by
updating the entity's row (``lock``): the counter is incremented there, in the same transaction
as the insert of the version, so the row lock orders concurrent saves on PostgreSQL, an aborted
save gives its number back, and on SQLite the first statement being a write takes the database's
write lock for the whole transaction (in every process). The unique index on the number is the
last line of defence.

A version stores its configuration whole (a few kB) and the summary of its diff against its
parent, computed once at save; the list reads summaries, never configurations.
"""
from __future__ import annotations

import functools
from datetime import datetime
from typing import NamedTuple

from peewee import (
    Value,
)

from models.configs import diff, references, schemas
from models.configs.tables import Version, VersionedEntity
from models.identity.principal import Principal
from models.kernel.db import database, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.pagination import Page
from models.kernel.sql import Prepared


class VersionRecord(NamedTuple):
    """A version as reads return it, without its configuration."""
    id: str
    entity_type: str
    entity_id: str
    workspace_id: str
    version_number: int
    parent_version_id: str | None
    branch_id: str | None
    name: str
    config_diff_summary: list
    created_by: str
    created_at: datetime
    is_published: bool
    published_at: datetime | None
    published_by: str | None
    closed_feedbacks: list | None  # [{id, number, title}] of the feedback it closed


_VERSION_COLUMNS = (Version.id, Version.entity_type, Version.entity_id, Version.workspace, Version.version_number,
                    Version.parent_version_id, Version.branch_id, Version.name, Version.config_diff_summary,
                    Version.created_by, Version.created_at, Version.is_published, Version.published_at,
                    Version.published_by, Version.closed_feedbacks)


def _of_entity(workspace_id, entity_type, entity_id, *columns):
    return Version.in_workspace(workspace_id, *columns).where(
        (Version.entity_type == entity_type) & (Version.entity_id == entity_id))


# Numbers run 1..N without gaps and versions go only with their entity, so the newest-first page
# at ``offset`` is the versions numbered N - offset and below, read straight off the unique index
# (no rows skipped), and the total is the entity's counter (no count). ``Value(converter=False)``
# lets the compiled statement's marker stand for the number.
_PAGE = Prepared(
    lambda workspace_id, entity_type, entity_id, top, limit:
        _of_entity(workspace_id, entity_type, entity_id, *_VERSION_COLUMNS)
        .where(Version.version_number <= Value(top, converter=False))
        .order_by(Version.version_number.desc()).limit(limit),
)


_VersionWithConfig = NamedTuple("_VersionWithConfig", [*VersionRecord.__annotations__.items(), ("config", dict)])
_ONE = Prepared(lambda workspace_id, entity_type, entity_id, version_id:
                _of_entity(workspace_id, entity_type, entity_id, *_VERSION_COLUMNS, Version.config)
                .where(Version.id == version_id))


class Locked(NamedTuple):
    """An entity's row as ``lock`` leaves it, locked until the transaction ends."""
    version_count: int
    head_version_id: str | None
    published_version_id: str | None


def lock(model: type[VersionedEntity], workspace_id: str, entity_id: str, *, take_number: bool = False) -> Locked:
    """Lock the entity's row for the rest of the transaction (and take the next version number);
    NotFound if the workspace has no such entity. Must be the transaction's first statement."""
    query = (model.update(version_count=model.version_count + (1 if take_number else 0))
             .where((model.workspace == workspace_id) & (model.id == entity_id))
             .returning(model.version_count, model.head_version_id, model.published_version_id))
    rows = list(query.tuples().execute())
    if not rows:
        raise NotFound(f"No {model.label()} {entity_id} in this workspace.")
    return Locked(*rows[0])


def writing():
    """The transaction every write of versions runs in (see the module's docstring)."""
    return database.atomic()


def append(model: type[VersionedEntity], principal: Principal, workspace_id: str, entity_id: str, config: dict, *,
           name: str | None, parent_id: str | None, parent_config: dict | None = None,
           branch_id: str | None = None, closed_feedbacks: list[dict] | None = None) -> VersionRecord:
    """Append a version holding ``config`` (already complete and checked) after ``parent_id``,
    whose configuration the caller passes when it has read it already; ``closed_feedbacks``
    lists the feedback it closes. Runs inside
    ``writing()``; takes the entity's lock and the next number itself. The caller moves the head
    it advances (the entity's, or a branch's)."""
    number = lock(model, workspace_id, entity_id, take_number=True).version_count
    if parent_config is None:
        parent_config = config_of(workspace_id, parent_id) if parent_id else {}
    now = utcnow()
    version = Version.create(
        workspace=workspace_id, entity_type=model.KIND, entity_id=entity_id, version_number=number,
        parent_version_id=parent_id, branch_id=branch_id, name=name or f"Version {number}", config=config,
        config_diff_summary=diff.summary(diff.diff(parent_config, config)),
        created_by=principal.user_id, created_at=now, closed_feedbacks=closed_feedbacks or None,
    )
    references.version_saved(model, workspace_id, entity_id, version.id, config)
    return _record(version)


def config_of(workspace_id: str, version_id: str) -> dict:
    return Version.in_workspace(workspace_id, Version.config).where(Version.id == version_id).scalar()


def list_versions(model: type[VersionedEntity], *, workspace_id: str, entity_id: str, limit: int,
                  offset: int) -> Page[VersionRecord]:
    """The entity's versions, newest first, branch commits included: two statements whatever the
    offset (the entity's counter, then the page)."""
    total = _counter(model).scalar(workspace_id=workspace_id, entity_id=entity_id)
    if total is None:
        raise NotFound(f"No {model.label()} {entity_id} in this workspace.")
    items = _PAGE.records(VersionRecord, workspace_id=workspace_id, entity_type=model.KIND, entity_id=entity_id,
                          top=total - offset, limit=limit) if offset < total else []
    return Page(items=items, total=total, limit=limit, offset=offset)


@functools.cache
def _counter(model: type[VersionedEntity]) -> Prepared:
    return Prepared(lambda workspace_id, entity_id:
                    model.in_workspace(workspace_id, model.version_count).where(model.id == entity_id))


def require_entity(model: type[VersionedEntity], workspace_id: str, entity_id: str) -> None:
    if not model.in_workspace(workspace_id, model.id).where(model.id == entity_id).exists():
        raise NotFound(f"No {model.label()} {entity_id} in this workspace.")


def get_version(model: type[VersionedEntity], *, workspace_id: str, entity_id: str,
                version_id: str) -> tuple[VersionRecord, dict]:
    """One version of the entity and its configuration."""
    row = _ONE.first(_VersionWithConfig, workspace_id=workspace_id, entity_type=model.KIND, entity_id=entity_id,
                     version_id=version_id)
    if row is None:
        require_entity(model, workspace_id, entity_id)
        raise NotFound(f"No version {version_id} of {model.label()} {entity_id}.")
    return VersionRecord._make(row[:-1]), row.config


class VersionDiff(NamedTuple):
    source: VersionRecord | None  # None: the first version, compared with an empty configuration
    target: VersionRecord
    changes: list[diff.Change]

    @property
    def summary(self) -> list[dict]:
        return diff.summary(self.changes)


def diff_versions(model: type[VersionedEntity], *, workspace_id: str, entity_id: str, version_id: str,
                  against: str | None = None) -> VersionDiff:
    """What changed from ``against`` (by default the version's parent) to ``version_id``."""
    target, config = get_version(model, workspace_id=workspace_id, entity_id=entity_id, version_id=version_id)
    source_id = against or target.parent_version_id
    if source_id is None:
        return VersionDiff(None, target, diff.diff({}, config))
    try:
        source, source_config = get_version(model, workspace_id=workspace_id, entity_id=entity_id,
                                            version_id=source_id)
    except NotFound:
        raise InvalidInput(f"against: {source_id} is not a version of {model.label()} {entity_id}.") from None
    return VersionDiff(source, target, diff.diff(source_config, config))


def publish_version(model: type[VersionedEntity], principal: Principal, *, workspace_id: str, entity_id: str,
                    version_id: str) -> VersionRecord:
    """Make ``version_id`` the entity's live configuration; the one published before is no longer."""
    with writing():
        locked = lock(model, workspace_id, entity_id)
        version, config = get_version(model, workspace_id=workspace_id, entity_id=entity_id, version_id=version_id)
        if locked.published_version_id == version_id:
            return version
        _still_valid(model, workspace_id, config, f"Version {version.version_number} cannot be published")
        if locked.published_version_id:
            Version.update(is_published=False).where(Version.id == locked.published_version_id).execute()
        now = utcnow()
        Version.update(is_published=True, published_at=now, published_by=principal.user_id).where(
            Version.id == version_id).execute()
        model.update(published_version_id=version_id, updated_at=now).where(model.id == entity_id).execute()
        return version._replace(is_published=True, published_at=now, published_by=principal.user_id)


def restore_version(model: type[VersionedEntity], principal: Principal, *, workspace_id: str, entity_id: str,
                    version_id: str, name: str | None = None) -> VersionRecord:
    """A new main-line version holding ``version_id``'s configuration (checked again: an agent it
    names may be gone since)."""
    with writing():
        head = lock(model, workspace_id, entity_id).head_version_id
        old, config = get_version(model, workspace_id=workspace_id, entity_id=entity_id, version_id=version_id)
        config = schemas.complete(model.KIND, config)
        _still_valid(model, workspace_id, config, f"Version {old.version_number} cannot be restored")
        version = append(model, principal, workspace_id, entity_id, config, parent_id=head,
                         name=name or f"Restored from version {old.version_number}")
        move_head(model, entity_id, version.id)
        return version


def _still_valid(model: type[VersionedEntity], workspace_id: str, config: dict, refusal: str) -> None:
    """Conflict when a saved configuration names what has gone since (a workflow's deleted agent);
    what it names is held until the transaction ends."""
    try:
        references.check_references(model, workspace_id, config)
    except InvalidInput as exc:
        raise Conflict(f"{refusal}: {exc.message}") from None


def move_head(model: type[VersionedEntity], entity_id: str, version_id: str) -> None:
    model.update(head_version_id=version_id, updated_at=utcnow()).where(model.id == entity_id).execute()


def delete_versions(model: type[VersionedEntity], workspace_id: str, entity_id: str) -> None:
    Version.delete().where((Version.workspace == workspace_id) & (Version.entity_type == model.KIND)
                           & (Version.entity_id == entity_id)).execute()


def _record(version: Version) -> VersionRecord:
    return VersionRecord(
        id=version.id, entity_type=version.entity_type, entity_id=version.entity_id,
        workspace_id=version.workspace_id, version_number=version.version_number,
        parent_version_id=version.parent_version_id, branch_id=version.branch_id, name=version.name,
        config_diff_summary=version.config_diff_summary, created_by=version.created_by,
        created_at=version.created_at, is_published=version.is_published, published_at=version.published_at,
        published_by=version.published_by, closed_feedbacks=version.closed_feedbacks,
    )
