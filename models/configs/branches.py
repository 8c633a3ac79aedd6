"""Branches: a line of versions off an entity's main line, merged back or closed.

A branch starts at a base version, with its head there and no commits. Each commit appends a
version carrying the branch's id after the branch's head. Merging computes the three-way merge
of the base, the main line's head and the branch's head (models.configs.diff): where both lines
changed the same paths, the merge is refused with the conflicting paths until the caller chooses
a side for each. The merged configuration becomes a new version on the main line.

Status moves only forward: open -> merged, open -> closed. Every write takes the entity's lock
first (models.configs.versioning), so a branch's head, count and status change one writer at a time.
"""
from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from peewee import JOIN, SQL, fn

from models.configs import diff, references, schemas
from models.configs.tables import CLOSED, MERGED, OPEN, Branch, Version, VersionedEntity
from models.configs.versioning import (
    VersionRecord,
    append,
    config_of,
    get_version,
    lock,
    move_head,
    require_entity,
    writing,
)
from models.identity.principal import Principal
from models.kernel.db import utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.pagination import Page, PageQuery
from models.kernel.scoping import same_workspace
from models.kernel.sql import Prepared

# The versions list carries the open branches: the most recently updated ones, at most this many.
OPEN_BRANCHES_SHOWN = 100


class BranchRecord(NamedTuple):
    id: str
    entity_type: str
    entity_id: str
    workspace_id: str
    name: str
    status: str
    base_version_id: str
    base_version_number: int
    head_version_id: str
    head_version_number: int
    commit_count: int
    merged_version_id: str | None
    created_by: str
    created_at: datetime
    updated_at: datetime


_BASE, _HEAD = Version.alias(), Version.alias()
_COLUMNS = (Branch.id, Branch.entity_type, Branch.entity_id, Branch.workspace, Branch.name, Branch.status,
            Branch.base_version_id, _BASE.version_number, Branch.head_version_id, _HEAD.version_number,
            Branch.commit_count, Branch.merged_version_id, Branch.created_by, Branch.created_at, Branch.updated_at)
_COUNT = fn.COUNT(SQL("1"))


def _of_entity(workspace_id, entity_type, entity_id, *columns):
    return Branch.in_workspace(workspace_id, *columns).where(
        (Branch.entity_type == entity_type) & (Branch.entity_id == entity_id))


def _with_numbers(workspace_id, entity_type, entity_id):
    return (_of_entity(workspace_id, entity_type, entity_id, *_COLUMNS)
            .join_from(Branch, _BASE, JOIN.LEFT_OUTER, on=same_workspace(_BASE.id == Branch.base_version_id, _BASE, Branch))
            .join_from(Branch, _HEAD, JOIN.LEFT_OUTER, on=same_workspace(_HEAD.id == Branch.head_version_id, _HEAD, Branch)))


_NEWEST_FIRST = (Branch.created_at.desc(), Branch.id.desc())
_PAGES = {
    # Every branch, or those of one status.
    False: PageQuery(lambda workspace_id, entity_type, entity_id, limit, offset:
                     _with_numbers(workspace_id, entity_type, entity_id)
                     .order_by(*_NEWEST_FIRST).limit(limit).offset(offset),
                     lambda workspace_id, entity_type, entity_id:
                     _of_entity(workspace_id, entity_type, entity_id, _COUNT)),
    True: PageQuery(lambda workspace_id, entity_type, entity_id, status, limit, offset:
                    _with_numbers(workspace_id, entity_type, entity_id).where(Branch.status == status)
                    .order_by(*_NEWEST_FIRST).limit(limit).offset(offset),
                    lambda workspace_id, entity_type, entity_id, status:
                    _of_entity(workspace_id, entity_type, entity_id, _COUNT).where(Branch.status == status)),
}


_ONE = Prepared(lambda workspace_id, entity_type, entity_id, branch_id:
                _with_numbers(workspace_id, entity_type, entity_id).where(Branch.id == branch_id))
_OPEN = Prepared(lambda workspace_id, entity_type, entity_id, status, limit:
                 _with_numbers(workspace_id, entity_type, entity_id).where(Branch.status == status)
                 .order_by(Branch.updated_at.desc(), Branch.id.desc()).limit(limit))


def open_branches(model: type[VersionedEntity], *, workspace_id: str, entity_id: str) -> list[BranchRecord]:
    """The open branches of the entity, most recently updated first (at most OPEN_BRANCHES_SHOWN)."""
    return _OPEN.records(BranchRecord, workspace_id=workspace_id, entity_type=model.KIND, entity_id=entity_id,
                         status=OPEN, limit=OPEN_BRANCHES_SHOWN)


def list_branches(model: type[VersionedEntity], *, workspace_id: str, entity_id: str, status: str | None,
                  limit: int, offset: int) -> Page[BranchRecord]:
    require_entity(model, workspace_id, entity_id)
    params = {"status": status} if status else {}
    return _PAGES[bool(status)].page(BranchRecord, limit=limit, offset=offset, workspace_id=workspace_id,
                                     entity_type=model.KIND, entity_id=entity_id, **params)


def get_branch(model: type[VersionedEntity], *, workspace_id: str, entity_id: str, branch_id: str) -> BranchRecord:
    branch = _ONE.first(BranchRecord, workspace_id=workspace_id, entity_type=model.KIND, entity_id=entity_id,
                        branch_id=branch_id)
    if branch is None:
        require_entity(model, workspace_id, entity_id)
        raise NotFound(f"No branch {branch_id} of {model.label()} {entity_id}.")
    return branch


def create_branch(model: type[VersionedEntity], principal: Principal, *, workspace_id: str, entity_id: str,
                  name: str, base_version_id: str) -> BranchRecord:
    with writing():
        lock(model, workspace_id, entity_id)
        try:
            get_version(model, workspace_id=workspace_id, entity_id=entity_id, version_id=base_version_id)
        except NotFound:
            raise InvalidInput(f"baseVersionId: {base_version_id} is not a version of {model.label()} "
                               f"{entity_id}.") from None
        now = utcnow()
        branch = Branch.create(workspace=workspace_id, entity_type=model.KIND, entity_id=entity_id, name=name,
                               base_version_id=base_version_id, head_version_id=base_version_id,
                               created_by=principal.user_id, created_at=now, updated_at=now)
    return get_branch(model, workspace_id=workspace_id, entity_id=entity_id, branch_id=branch.id)


def commit(model: type[VersionedEntity], principal: Principal, *, workspace_id: str, entity_id: str,
           branch_id: str, config: dict, name: str | None = None) -> tuple[BranchRecord, VersionRecord]:
    """Append ``config`` to the branch: a version carrying its id, after its head."""
    config = schemas.complete(model.KIND, config)
    with writing():
        lock(model, workspace_id, entity_id)
        branch = _open_branch(model, workspace_id, entity_id, branch_id, "take commits")
        references.check_references(model, workspace_id, config)
        version = append(model, principal, workspace_id, entity_id, config, name=name,
                         parent_id=branch.head_version_id, branch_id=branch_id)
        Branch.update(head_version_id=version.id, commit_count=Branch.commit_count + 1, updated_at=utcnow()).where(
            Branch.id == branch_id).execute()
    return get_branch(model, workspace_id=workspace_id, entity_id=entity_id, branch_id=branch_id), version


def merge(model: type[VersionedEntity], principal: Principal, *, workspace_id: str, entity_id: str,
          branch_id: str, resolutions: dict[str, str] | None = None,
          name: str | None = None) -> tuple[BranchRecord, VersionRecord]:
    """Merge the branch into the main line: a new main-line version; Conflict with the paths both
    lines changed unless ``resolutions`` chooses 'main' or 'branch' for each."""
    with writing():
        head = lock(model, workspace_id, entity_id).head_version_id
        branch = _open_branch(model, workspace_id, entity_id, branch_id, "be merged")
        if branch.commit_count == 0:
            raise Conflict(f"The branch {branch.name!r} has no commits: there is nothing to merge.")
        base, main, theirs = (config_of(workspace_id, v) for v in (branch.base_version_id, head, branch.head_version_id))
        try:
            merged = diff.merge(base, main, theirs, resolutions or {})
        except diff.MergeConflict as conflict:
            paths = [c["path"] for c in conflict.conflicts]
            raise Conflict(
                f"The main line changed the same paths as the branch since its base: {_listed(paths)}. "
                "Choose 'main' or 'branch' for each in resolutions.",
                result={"conflicts": conflict.conflicts}) from None
        except ValueError as exc:
            raise InvalidInput(f"resolutions: {str(exc).rstrip('.')}.") from None
        try:
            merged = schemas.complete(model.KIND, merged)
            references.check_references(model, workspace_id, merged)
        except InvalidInput as exc:
            raise Conflict(f"The merged configuration is not valid: {exc.message}") from None
        version = append(model, principal, workspace_id, entity_id, merged, parent_id=head, parent_config=main,
                         name=name or f"Merge of branch {branch.name}")
        move_head(model, entity_id, version.id)
        Branch.update(status=MERGED, merged_version_id=version.id, updated_at=utcnow()).where(
            Branch.id == branch_id).execute()
    return get_branch(model, workspace_id=workspace_id, entity_id=entity_id, branch_id=branch_id), version


def close(model: type[VersionedEntity], *, workspace_id: str, entity_id: str, branch_id: str) -> BranchRecord:
    with writing():
        lock(model, workspace_id, entity_id)
        _open_branch(model, workspace_id, entity_id, branch_id, "be closed")
        Branch.update(status=CLOSED, updated_at=utcnow()).where(Branch.id == branch_id).execute()
    return get_branch(model, workspace_id=workspace_id, entity_id=entity_id, branch_id=branch_id)


def _open_branch(model, workspace_id: str, entity_id: str, branch_id: str, action: str) -> Branch:
    branch = _of_entity(workspace_id, model.KIND, entity_id, Branch).where(Branch.id == branch_id).first()
    if branch is None:
        raise NotFound(f"No branch {branch_id} of {model.label()} {entity_id}.")
    if branch.status != OPEN:
        raise Conflict(f"The branch {branch.name!r} is {branch.status}; only an open branch can {action}.")
    return branch


def _listed(paths: list[str], shown: int = 20) -> str:
    text = ", ".join(paths[:shown])
    return text + (f" and {len(paths) - shown} more" if len(paths) > shown else "")
