"""Suites of assertions: a named set of expected behaviours, put on agents and workflows.

A suite's name is unique in its workspace without regard to case (a unique index on the folded
name: two suites created at once with one name get one row and one 409, on either database). The
list is by name, with the number of assertions of each; deleting a suite deletes its assertions
and its assignments (foreign keys ON DELETE CASCADE).

``suites_for`` is what a simulation of an agent or workflow evaluates: the suites assigned to it.
"""
from __future__ import annotations

import functools
from datetime import datetime
from typing import NamedTuple

from peewee import IntegrityError, fn

from models.feedback.feedbacks import text_field
from models.identity.principal import Principal
from models.kernel.db import database, is_postgres, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.pagination import Page, workspace_list
from models.kernel.sql import Prepared, like, like_pattern
from models.assertions.tables import Assertion, AssertionSuite, SuiteAssignment

NAME_MAX_CHARS = 100
DESCRIPTION_MAX_CHARS = 2000
ENTITY_TYPES = ("agent", "workflow")
UNSET = object()  # a field an update leaves as it is (None clears it)


class SuiteRecord(NamedTuple):
    id: str
    workspace_id: str
    name: str
    description: str | None
    assertion_count: int
    created_by: str
    created_at: datetime
    updated_at: datetime


_S, _A, _G = AssertionSuite, Assertion, SuiteAssignment


# The count rides on each row: a correlated count over the assertions' (suite_id, ...) index.
_COUNT = _A.in_workspace(_S.workspace, fn.COUNT(_A.id)).where(_A.suite == _S.id)
_COLUMNS = (_S.id, _S.workspace, _S.name, _S.description, _COUNT.alias("assertion_count"), _S.created_by,
            _S.created_at, _S.updated_at)
_ONE = Prepared(lambda workspace_id, suite_id: _S.in_workspace(workspace_id, *_COLUMNS).where(_S.id == suite_id))
_FOR = Prepared(lambda workspace_id, entity_type, entity_id: _S.in_workspace(workspace_id, *_COLUMNS)
                .where(_S.id.in_(_G.in_workspace(workspace_id, _G.suite)
                                 .where((_G.entity_type == entity_type) & (_G.entity_id == entity_id))))
                .order_by(_S.name_key, _S.id))

_FILTERS = {
    "name_part": lambda params: like(_S.name_key, params["name_part"], fold=False),
    "entity_type": lambda params: _S.id.in_(_G.in_workspace(params["workspace_id"], _G.suite).where(
        (_G.entity_type == params["entity_type"]) & (_G.entity_id == params["entity_id"]))),
}


@functools.cache
def _page(names: tuple[str, ...]):
    def where(params):
        return [_FILTERS[name](params) for name in names if name in _FILTERS]

    # By name (the unique index on the folded name serves the order and the page).
    return workspace_list(_S, _COLUMNS, order_by=(_S.name_key, _S.id), names=names,
                          where=where)


def _name(value) -> str:
    return text_field(value, "name", NAME_MAX_CHARS, required=True)


def _description(value) -> str | None:
    return text_field(value, "description", DESCRIPTION_MAX_CHARS, required=False, multiline=True)


def _key(name: str) -> str:
    return name.lower()


def _taken(workspace_id: str, name: str, suite_id: str | None = None) -> Conflict:
    holder = _S.in_workspace(workspace_id, _S.id).where((_S.name_key == _key(name))
                                                         & (_S.id != (suite_id or ""))).scalar()
    if holder is None:
        return Conflict("The suite conflicts with another written at the same time; try again.")
    return Conflict(f"The workspace has a suite named {name!r} already ({holder}); suite names are unique without "
                    "regard to case.")


def create(principal: Principal, *, workspace_id: str, name: str, description: str | None = None) -> SuiteRecord:
    name, description = _name(name), _description(description)
    now = utcnow()
    try:
        with database.atomic():
            row = _S.create(workspace=workspace_id, name=name, name_key=_key(name), description=description,
                            created_by=principal.user_id, created_at=now, updated_at=now)
    except IntegrityError:
        raise _taken(workspace_id, name) from None
    return get(workspace_id=workspace_id, suite_id=row.id)


def list_suites(*, workspace_id: str, limit: int, offset: int, q: str | None = None, entity_type: str | None = None,
                entity_id: str | None = None) -> Page[SuiteRecord]:
    """The workspace's suites by name (without regard to case); ``q`` keeps those whose name holds
    it, ``entity_type`` with ``entity_id`` those assigned to that agent or workflow. One statement
    per page whatever the filters."""
    if (entity_type is None) != (entity_id is None):
        raise InvalidInput("entityType and entityId go together: give both to list the suites assigned to an agent "
                           "or workflow, or neither.")
    if entity_type is not None and entity_type not in ENTITY_TYPES:
        raise InvalidInput(f"entityType must be one of {', '.join(ENTITY_TYPES)}.")
    values = {}
    if q is not None:
        values["name_part"] = like_pattern(_key(q))
    if entity_type is not None:
        values |= {"entity_type": entity_type, "entity_id": entity_id}
    return _page(tuple(sorted(values))).page(SuiteRecord, workspace_id=workspace_id, limit=limit, offset=offset,
                                             **values)


def get(*, workspace_id: str, suite_id: str) -> SuiteRecord:
    record = _ONE.first(SuiteRecord, workspace_id=workspace_id, suite_id=suite_id)
    if record is None:
        raise NotFound(f"No suite {suite_id} in this workspace.")
    return record


def lock(workspace_id: str, suite_id: str) -> None:
    """The suite's row locked (PostgreSQL; SQLite has one writer) until the transaction ends, so
    that changes of its assertions and assignments apply one after the other; NotFound otherwise."""
    query = _S.in_workspace(workspace_id, _S.id).where(_S.id == suite_id)
    if (query.for_update() if is_postgres() else query).scalar() is None:
        raise NotFound(f"No suite {suite_id} in this workspace.")


def touch(workspace_id: str, suite_id: str) -> None:
    """The suite's updatedAt moved to now: a change of its assertions changes the suite."""
    _S.update(updated_at=utcnow()).where((_S.workspace == workspace_id) & (_S.id == suite_id)).execute()


def update(*, workspace_id: str, suite_id: str, name: str | None = None, description=UNSET) -> SuiteRecord:
    """Its name (under the rule of a new suite: 409 naming the suite holding it) and description
    (None clears it)."""
    changes: dict = {"updated_at": utcnow()}
    if name is not None:
        name = changes["name"] = _name(name)
        changes["name_key"] = _key(name)
    if description is not UNSET:
        changes["description"] = _description(description)
    try:
        with database.atomic():
            if not _S.update(**changes).where((_S.workspace == workspace_id) & (_S.id == suite_id)).execute():
                raise NotFound(f"No suite {suite_id} in this workspace.")
    except IntegrityError:
        raise _taken(workspace_id, name, suite_id) from None
    return get(workspace_id=workspace_id, suite_id=suite_id)


def delete(*, workspace_id: str, suite_id: str) -> None:
    """The suite with its assertions and assignments (their foreign keys cascade)."""
    if not _S.delete().where((_S.workspace == workspace_id) & (_S.id == suite_id)).execute():
        raise NotFound(f"No suite {suite_id} in this workspace.")


def suites_for(*, workspace_id: str, entity_type: str, entity_id: str) -> list[SuiteRecord]:
    """The suites assigned to the agent or workflow, by name: what a simulation of it evaluates
    (their assertions: models.assertions.assertions.assertions_of). One statement."""
    return _FOR.records(SuiteRecord, workspace_id=workspace_id, entity_type=entity_type, entity_id=entity_id)
