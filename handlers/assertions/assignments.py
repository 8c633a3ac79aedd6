"""Which agents and workflows a unit-test suite is on: listUnitTestAssignments,
assignUnitTestSuite, unassignUnitTestSuite."""
from __future__ import annotations

from api.envelope import ok
from handlers.assertions.shapes import assignment_shape
from handlers.wire import deleted
from models.assertions import assignments


def list_unit_test_assignments(workspaceId: str, suiteId: str, limit: int = 20, offset: int = 0):
    page = assignments.list_assignments(workspace_id=workspaceId, suite_id=suiteId, limit=limit, offset=offset)
    return ok({"assignments": [assignment_shape(a) for a in page.items], "pagination": page.pagination()})


def assign_unit_test_suite(workspaceId: str, suiteId: str, body: dict, principal):
    record = assignments.assign(principal, workspace_id=workspaceId, suite_id=suiteId, entity_type=body["entityType"],
                                entity_id=body["entityId"])
    return ok({"assignment": assignment_shape(record)}, "Suite assigned")


def unassign_unit_test_suite(workspaceId: str, suiteId: str, entityType: str, entityId: str):
    assignments.unassign(workspace_id=workspaceId, suite_id=suiteId, entity_type=entityType, entity_id=entityId)
    return deleted(entityId, "Suite unassigned")
