"""Which agents and workflows a suite is put on: a simulation of one evaluates the assertions of
the suites assigned to it (models.assertions.suites.suites_for).

Assigning a suite to an entity it is on already changes nothing (two at once leave one row: the
suite's row is locked while its assignments change, and a unique index backs it). The entity's row
is locked too, so that an assignment cannot outlive the entity: deleting an agent or workflow
deletes its assignments (``forget``, called by models.entity_users in the deletion's transaction),
and an assignment made meanwhile either waits for the deletion and finds no entity, or is made
first and deleted with it.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import NamedTuple

from peewee import JOIN, IntegrityError, fn

from models.assertions import suites
from models.assertions.tables import SuiteAssignment
from models.configs.tables import Agent, Workflow
from models.identity.principal import Principal
from models.kernel.db import database, is_postgres, utcnow
from models.kernel.errors import InvalidInput, NotFound
from models.kernel.pagination import Page, PageQuery
from models.kernel.scoping import same_workspace


class AssignmentRecord(NamedTuple):
    suite_id: str
    entity_type: str
    entity_id: str
    entity_name: str | None
    assigned_by: str
    assigned_at: datetime


_G = SuiteAssignment
_MODELS = {"agent": Agent, "workflow": Workflow}


def _named(query):
    """``query`` of assignments joined to each one's agent or workflow, for its name."""
    return (query
            .join_from(_G, Agent, JOIN.LEFT_OUTER,
                       on=same_workspace((Agent.id == _G.entity_id) & (_G.entity_type == "agent"), Agent, _G))
            .join_from(_G, Workflow, JOIN.LEFT_OUTER,
                       on=same_workspace((Workflow.id == _G.entity_id) & (_G.entity_type == "workflow"), Workflow, _G)))


_COLUMNS = (_G.suite, _G.entity_type, _G.entity_id, fn.COALESCE(Agent.name, Workflow.name), _G.assigned_by,
            _G.assigned_at)
_PAGE = PageQuery(
    lambda workspace_id, suite_id, limit, offset: _named(_G.in_workspace(workspace_id, *_COLUMNS))
    .where(_G.suite == suite_id).order_by(_G.assigned_at, _G.id).limit(limit).offset(offset),
    lambda workspace_id, suite_id: _G.in_workspace(workspace_id, fn.COUNT(_G.id)).where(_G.suite == suite_id),
)


def _entity_model(entity_type: str):
    try:
        return _MODELS[entity_type]
    except KeyError:
        raise InvalidInput(f"entityType must be one of {', '.join(_MODELS)}.") from None


def _lock_entity(workspace_id: str, entity_type: str, entity_id: str) -> None:
    model = _entity_model(entity_type)
    query = model.in_workspace(workspace_id, model.id).where(model.id == entity_id)
    if (query.for_update() if is_postgres() else query).scalar() is None:
        raise NotFound(f"entityId: no {entity_type} {entity_id} in this workspace.")


def _one(workspace_id: str, suite_id: str, entity_type: str, entity_id: str) -> AssignmentRecord | None:
    row = (_named(_G.in_workspace(workspace_id, *_COLUMNS))
           .where((_G.suite == suite_id) & (_G.entity_type == entity_type) & (_G.entity_id == entity_id))
           .tuples().first())
    return None if row is None else AssignmentRecord._make(row)


def assign(principal: Principal, *, workspace_id: str, suite_id: str, entity_type: str,
           entity_id: str) -> AssignmentRecord:
    """The suite on the agent or workflow (NotFound naming whichever is not of the workspace); the
    assignment it has already, if any."""
    _entity_model(entity_type)
    with database.atomic():
        suites.lock(workspace_id, suite_id)
        _lock_entity(workspace_id, entity_type, entity_id)
        found = _one(workspace_id, suite_id, entity_type, entity_id)
        if found is not None:
            return found
        try:
            with database.atomic():  # a savepoint: a twin's insert leaves the request's transaction whole
                _G.create(workspace=workspace_id, suite=suite_id, entity_type=entity_type, entity_id=entity_id,
                          assigned_by=principal.user_id, assigned_at=utcnow())
        except IntegrityError:
            pass
    return _one(workspace_id, suite_id, entity_type, entity_id)


def list_assignments(*, workspace_id: str, suite_id: str, limit: int, offset: int) -> Page[AssignmentRecord]:
    """The suite's assignments, first made first; NotFound for a suite not of the workspace. One
    statement for a page with rows."""
    page = _PAGE.page(AssignmentRecord, limit=limit, offset=offset, workspace_id=workspace_id, suite_id=suite_id)
    if not page.items:
        suites.get(workspace_id=workspace_id, suite_id=suite_id)
    return page


def of(workspace_id: str, suite_ids: Iterable[str]) -> dict[str, list[AssignmentRecord]]:
    """The assignments of each of the suites ``suite_ids``, first made first, in one statement."""
    ids = sorted(set(suite_ids))
    found: dict[str, list[AssignmentRecord]] = defaultdict(list)
    if ids:
        rows = (_named(_G.in_workspace(workspace_id, *_COLUMNS)).where(_G.suite.in_(ids))
                .order_by(_G.assigned_at, _G.id).tuples())
        for row in rows:
            found[row[0]].append(AssignmentRecord._make(row))
    return found


def unassign(*, workspace_id: str, suite_id: str, entity_type: str, entity_id: str) -> None:
    _entity_model(entity_type)
    with database.atomic():
        suites.lock(workspace_id, suite_id)
        if not _G.delete().where((_G.workspace == workspace_id) & (_G.suite == suite_id)
                                 & (_G.entity_type == entity_type) & (_G.entity_id == entity_id)).execute():
            raise NotFound(f"Suite {suite_id} is not assigned to {entity_type} {entity_id}.")


def forget(entity_type: str, workspace_id: str, entity_id: str) -> None:
    """The assignments of an agent or workflow being deleted, deleted in its transaction
    (models.entity_users)."""
    _G.delete().where((_G.workspace == workspace_id) & (_G.entity_type == entity_type)
                      & (_G.entity_id == entity_id)).execute()
