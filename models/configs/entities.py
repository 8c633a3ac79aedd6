"""Create, read, update and delete a versioned entity (an agent or a workflow), whichever its kind.

Agents and workflows differ in their configuration's kind and in their hooks (a workflow names
agents; an agent in use cannot go), not in how they are stored: models.configs.entities and
models.configs.references declare the models, and these functions serve both.
"""
from __future__ import annotations

import functools
from datetime import datetime
from typing import NamedTuple

from peewee import JOIN, SQL, fn

from models.configs import diff, references, schemas
from models.configs.tables import Agent, Branch, Version, VersionedEntity, Workflow
from models.configs.versioning import VersionRecord, append, config_of, delete_versions, lock, move_head, writing
from models.identity.principal import Principal
from models.kernel.db import utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.pagination import Page, PageQuery
from models.kernel.scoping import same_workspace
from models.kernel.sql import Prepared


class EntityRecord(NamedTuple):
    id: str
    workspace_id: str
    name: str
    created_by: str
    created_at: datetime
    updated_at: datetime
    head_version_id: str | None
    head_version_number: int | None
    published_version_id: str | None
    published_version_number: int | None


class EntityDetail(NamedTuple):
    entity: EntityRecord
    config: dict  # the head of the main line
    live_config: dict | None  # the published version's


_COUNT = fn.COUNT(SQL("1"))


def _columns(model, head, live):
    return (model.id, model.workspace, model.name, model.created_by, model.created_at, model.updated_at,
            model.head_version_id, head.version_number, model.published_version_id, live.version_number)


def _joined(model, workspace_id, *extra):
    """The entity with the numbers (and ``extra`` columns) of its head and published versions."""
    head, live = Version.alias(), Version.alias()
    return (model.in_workspace(workspace_id, *_columns(model, head, live), *(column(head, live) for column in extra))
            .join_from(model, head, JOIN.LEFT_OUTER, on=same_workspace(head.id == model.head_version_id, head, model))
            .join_from(model, live, JOIN.LEFT_OUTER, on=same_workspace(live.id == model.published_version_id, live, model)))


_EntityWithConfigs = NamedTuple("_EntityWithConfigs", [*EntityRecord.__annotations__.items(), ("config", dict),
                                                       ("live_config", dict | None)])


@functools.cache
def _one(model) -> Prepared:
    return Prepared(lambda workspace_id, entity_id:
                    _joined(model, workspace_id, lambda head, live: head.config, lambda head, live: live.config)
                    .where(model.id == entity_id))


@functools.cache
def _page_query(model) -> PageQuery:
    return PageQuery(
        lambda workspace_id, limit, offset: _joined(model, workspace_id)
        .order_by(model.created_at.desc(), model.id.desc()).limit(limit).offset(offset),
        lambda workspace_id: model.in_workspace(workspace_id, _COUNT),
    )


def create(model: type[VersionedEntity], principal: Principal, *, workspace_id: str, name: str,
           config: dict | None = None, version_name: str | None = None) -> EntityDetail:
    """A new entity whose version 1 holds ``config`` (defaults where omitted) and is published,
    so that it is live from the start."""
    config = schemas.complete(model.KIND, config)
    now = utcnow()
    with writing():
        entity = model.create(workspace=workspace_id, name=name, created_by=principal.user_id, created_at=now,
                              updated_at=now)
        references.check_references(model, workspace_id, config)
        version = append(model, principal, workspace_id, entity.id, config, name=version_name, parent_id=None)
        Version.update(is_published=True, published_at=now, published_by=principal.user_id).where(
            Version.id == version.id).execute()
        model.update(head_version_id=version.id, published_version_id=version.id).where(
            model.id == entity.id).execute()
    return get(model, workspace_id=workspace_id, entity_id=entity.id)


def list_page(model: type[VersionedEntity], *, workspace_id: str, limit: int, offset: int) -> Page[EntityRecord]:
    """The workspace's entities of this kind, newest first."""
    return _page_query(model).page(EntityRecord, limit=limit, offset=offset, workspace_id=workspace_id)


def get(model: type[VersionedEntity], *, workspace_id: str, entity_id: str) -> EntityDetail:
    row = _one(model).first(_EntityWithConfigs, workspace_id=workspace_id, entity_id=entity_id)
    if row is None:
        raise NotFound(f"No {model.label()} {entity_id} in this workspace.")
    return EntityDetail(EntityRecord._make(row[:-2]), row.config, row.live_config)


def update(model: type[VersionedEntity], principal: Principal, *, workspace_id: str, entity_id: str,
           name: str | None = None, config: dict | None = None,
           version_name: str | None = None) -> tuple[EntityDetail, VersionRecord | None]:
    """Rename in place; a configuration that differs from the head's becomes a new main-line
    version (not published: publishing is its own step). Returns the entity and that version."""
    version = None
    if config is not None:
        config = schemas.complete(model.KIND, config)
    with writing():
        head = lock(model, workspace_id, entity_id).head_version_id
        if name is not None:
            model.update(name=name, updated_at=utcnow()).where(model.id == entity_id).execute()
        if config is not None:
            references.check_references(model, workspace_id, config)
            head_config = config_of(workspace_id, head)
            # Compared as the diff compares (true is not 1), not by Python's ==.
            if diff.diff(head_config, config):
                version = append(model, principal, workspace_id, entity_id, config, name=version_name,
                                 parent_id=head, parent_config=head_config)
                move_head(model, entity_id, version.id)
    return get(model, workspace_id=workspace_id, entity_id=entity_id), version


def delete(model: type[VersionedEntity], *, workspace_id: str, entity_id: str, users=()) -> None:
    """The entity, its versions and its branches; Conflict when something still uses it: another
    configuration, or what ``users`` find (each ``(kind, workspace_id, entity_id)`` -> the
    descriptions of what uses it, models.entity_users lists them)."""
    with writing():
        lock(model, workspace_id, entity_id)
        references.before_delete(model, workspace_id, entity_id)
        if found := [description for user in users for description in user(model.KIND, workspace_id, entity_id)]:
            shown = ", ".join(found[:10]) + (f" and {len(found) - 10} more" if len(found) > 10 else "")
            raise Conflict(f"The {model.KIND} is used by {shown}; remove it from {'them' if len(found) > 1 else 'it'} "
                           f"or delete {'them' if len(found) > 1 else 'it'} first.")
        Branch.delete().where((Branch.workspace == workspace_id) & (Branch.entity_type == model.KIND)
                              & (Branch.entity_id == entity_id)).execute()
        delete_versions(model, workspace_id, entity_id)
        model.delete().where(model.id == entity_id).execute()


def kind(entity_type: str) -> type[VersionedEntity]:
    """The model of an ``entityType`` (agent or workflow) as the generic paths name it."""
    try:
        return {Agent.KIND: Agent, Workflow.KIND: Workflow}[entity_type]
    except KeyError:
        raise InvalidInput(f"entityType must be agent or workflow, not {entity_type!r}.") from None
