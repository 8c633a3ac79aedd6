"""Unit-test suites: createUnitTestSuite, listUnitTestSuites, getUnitTestSuite, updateUnitTestSuite,
deleteUnitTestSuite."""
from __future__ import annotations

from api.envelope import ok
from handlers.assertions.shapes import suite_shape
from handlers.wire import deleted
from models.assertions import assignments, suites
from models.assertions.suites import SuiteRecord


def shaped(record: SuiteRecord) -> dict:
    """The suite with its assignments (one statement more)."""
    return suite_shape(record, assignments.of(record.workspace_id, [record.id])[record.id])


def create_unit_test_suite(workspaceId: str, body: dict, principal):
    record = suites.create(principal, workspace_id=workspaceId, name=body["name"],
                           description=body.get("description"))
    return ok({"suite": suite_shape(record, [])}, "Suite created")


def list_unit_test_suites(workspaceId: str, limit: int = 20, offset: int = 0, q: str | None = None,
                          entityType: str | None = None, entityId: str | None = None):
    page = suites.list_suites(workspace_id=workspaceId, limit=limit, offset=offset, q=q, entity_type=entityType,
                              entity_id=entityId)
    assigned = assignments.of(workspaceId, [s.id for s in page.items])
    return ok({"suites": [suite_shape(s, assigned[s.id]) for s in page.items], "pagination": page.pagination()})


def get_unit_test_suite(workspaceId: str, suiteId: str):
    return ok({"suite": shaped(suites.get(workspace_id=workspaceId, suite_id=suiteId))})


def update_unit_test_suite(workspaceId: str, suiteId: str, body: dict):
    changes = {"description": body["description"]} if "description" in body else {}
    record = suites.update(workspace_id=workspaceId, suite_id=suiteId, name=body.get("name"), **changes)
    return ok({"suite": shaped(record)}, "Suite updated")


def delete_unit_test_suite(workspaceId: str, suiteId: str):
    suites.delete(workspace_id=workspaceId, suite_id=suiteId)
    return deleted(suiteId, "Suite deleted")
