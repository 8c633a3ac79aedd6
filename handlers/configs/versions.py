"""Versions: listVersions, getVersion, diffVersions, publishVersion, restoreVersion, and the wire
shapes of a version and of a branch."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import iso
from models.configs import branches, versioning
from models.configs.branches import BranchRecord
from models.configs.entities import kind
from models.configs.versioning import VersionRecord


def list_versions(entityType: str, entityId: str, workspaceId: str, limit: int = 20, offset: int = 0):
    model = kind(entityType)
    page = versioning.list_versions(model, workspace_id=workspaceId, entity_id=entityId, limit=limit, offset=offset)
    open_branches = branches.open_branches(model, workspace_id=workspaceId, entity_id=entityId)
    return ok({"versions": [version_shape(v) for v in page.items], "total": page.total, "limit": page.limit,
               "offset": page.offset, "openBranches": [branch_shape(b) for b in open_branches],
               "pagination": page.pagination()})


def get_version(entityType: str, entityId: str, versionId: str, workspaceId: str):
    version, config = versioning.get_version(kind(entityType), workspace_id=workspaceId, entity_id=entityId,
                                             version_id=versionId)
    return ok({"version": {**version_shape(version), "config": config}})


def diff_versions(entityType: str, entityId: str, versionId: str, workspaceId: str, against: str | None = None):
    diff = versioning.diff_versions(kind(entityType), workspace_id=workspaceId, entity_id=entityId,
                                    version_id=versionId, against=against)
    return ok({
        "fromVersionId": diff.source and diff.source.id,
        "fromVersionNumber": diff.source and diff.source.version_number,
        "toVersionId": diff.target.id,
        "toVersionNumber": diff.target.version_number,
        "changes": [change.as_wire() for change in diff.changes],
        "summary": diff.summary,
    })


def publish_version(entityType: str, entityId: str, versionId: str, workspaceId: str, principal):
    version = versioning.publish_version(kind(entityType), principal, workspace_id=workspaceId, entity_id=entityId,
                                         version_id=versionId)
    return ok({"version": version_shape(version)}, f"Version {version.version_number} published")


def restore_version(entityType: str, entityId: str, versionId: str, workspaceId: str, principal,
                    body: dict | None = None):
    version = versioning.restore_version(kind(entityType), principal, workspace_id=workspaceId, entity_id=entityId,
                                         version_id=versionId, name=(body or {}).get("name"))
    return ok({"version": version_shape(version)}, f"Version {version.version_number} saved")


def version_shape(version: VersionRecord) -> dict:
    """A version in its documented shape, without its configuration."""
    return {
        "id": version.id,
        "entityType": version.entity_type,
        "entityId": version.entity_id,
        "workspaceId": version.workspace_id,
        "versionNumber": version.version_number,
        "parentVersionId": version.parent_version_id,
        "isPublished": version.is_published,
        "createdBy": version.created_by,
        "createdAt": iso(version.created_at),
        "configDiffSummary": version.config_diff_summary,
        "publishedAt": iso(version.published_at),
        "publishedBy": version.published_by,
        "name": version.name,
        "branchId": version.branch_id,
        # As the acceptance of a solution recorded them (models.optimization).
        "closedFeedbacks": version.closed_feedbacks or [],
    }


def branch_shape(branch: BranchRecord) -> dict:
    return {
        "id": branch.id,
        "entityType": branch.entity_type,
        "entityId": branch.entity_id,
        "workspaceId": branch.workspace_id,
        "name": branch.name,
        "status": branch.status,
        "baseVersionId": branch.base_version_id,
        "baseVersionNumber": branch.base_version_number,
        "headVersionId": branch.head_version_id,
        "headVersionNumber": branch.head_version_number,
        "commitCount": branch.commit_count,
        "mergedVersionId": branch.merged_version_id,
        "createdBy": branch.created_by,
        "createdAt": iso(branch.created_at),
        "updatedAt": iso(branch.updated_at),
    }
