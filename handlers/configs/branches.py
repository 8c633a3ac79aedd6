"""Branches: createBranch, listBranches, getBranch, commitToBranch, mergeBranch, closeBranch (the
wire shape of a branch is in handlers.versions, whose list shows the open ones)."""
from __future__ import annotations

from api.envelope import ok
from models.configs import branches
from models.configs.entities import kind

from .versions import branch_shape, version_shape


def create_branch(entityType: str, entityId: str, body: dict, workspaceId: str, principal):
    branch = branches.create_branch(kind(entityType), principal, workspace_id=workspaceId, entity_id=entityId,
                                    name=body["name"], base_version_id=body["baseVersionId"])
    return ok({"branch": branch_shape(branch)}, "Branch created")


def list_branches(entityType: str, entityId: str, workspaceId: str, status: str | None = None, limit: int = 20,
                  offset: int = 0):
    page = branches.list_branches(kind(entityType), workspace_id=workspaceId, entity_id=entityId, status=status,
                                  limit=limit, offset=offset)
    return ok({"branches": [branch_shape(b) for b in page.items], "pagination": page.pagination()})


def get_branch(entityType: str, entityId: str, branchId: str, workspaceId: str):
    return ok({"branch": branch_shape(branches.get_branch(kind(entityType), workspace_id=workspaceId,
                                                          entity_id=entityId, branch_id=branchId))})


def commit_to_branch(entityType: str, entityId: str, branchId: str, body: dict, workspaceId: str, principal):
    branch, version = branches.commit(kind(entityType), principal, workspace_id=workspaceId, entity_id=entityId,
                                      branch_id=branchId, config=body["config"], name=body.get("name"))
    return ok({"branch": branch_shape(branch), "version": version_shape(version)},
              f"Version {version.version_number} committed")


def merge_branch(entityType: str, entityId: str, branchId: str, workspaceId: str, principal,
                 body: dict | None = None):
    body = body or {}
    branch, version = branches.merge(kind(entityType), principal, workspace_id=workspaceId, entity_id=entityId,
                                     branch_id=branchId, resolutions=body.get("resolutions"), name=body.get("name"))
    return ok({"branch": branch_shape(branch), "version": version_shape(version)},
              f"Branch merged as version {version.version_number}")


def close_branch(entityType: str, entityId: str, branchId: str, workspaceId: str):
    branch = branches.close(kind(entityType), workspace_id=workspaceId, entity_id=entityId, branch_id=branchId)
    return ok({"branch": branch_shape(branch)}, "Branch closed")
