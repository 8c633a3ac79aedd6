"""The assertions of a unit-test suite: createUnitTestAssertion, listUnitTestAssertions,
getUnitTestAssertion, updateUnitTestAssertion, deleteUnitTestAssertion."""
from __future__ import annotations

from api.envelope import ok
from handlers.assertions.shapes import assertion_shape
from handlers.wire import deleted
from models.assertions import assertions


def _params(body: dict) -> dict:
    """The kind's parameters of a body: everything but its name and kind."""
    return {key: value for key, value in body.items() if key not in ("name", "kind")}


def create_unit_test_assertion(workspaceId: str, suiteId: str, body: dict, principal):
    record = assertions.create(principal, workspace_id=workspaceId, suite_id=suiteId, name=body["name"],
                               kind=body["kind"], params=_params(body))
    return ok({"assertion": assertion_shape(record)}, "Assertion created")


def list_unit_test_assertions(workspaceId: str, suiteId: str, limit: int = 20, offset: int = 0):
    page = assertions.list_assertions(workspace_id=workspaceId, suite_id=suiteId, limit=limit, offset=offset)
    return ok({"assertions": [assertion_shape(a) for a in page.items], "pagination": page.pagination()})


def get_unit_test_assertion(workspaceId: str, suiteId: str, assertionId: str):
    return ok({"assertion": assertion_shape(assertions.get(workspace_id=workspaceId, suite_id=suiteId,
                                                           assertion_id=assertionId))})


def update_unit_test_assertion(workspaceId: str, suiteId: str, assertionId: str, body: dict):
    record = assertions.update(workspace_id=workspaceId, suite_id=suiteId, assertion_id=assertionId,
                               name=body.get("name"), kind=body.get("kind"), params=_params(body))
    return ok({"assertion": assertion_shape(record)}, "Assertion updated")


def delete_unit_test_assertion(workspaceId: str, suiteId: str, assertionId: str):
    assertions.delete(workspace_id=workspaceId, suite_id=suiteId, assertion_id=assertionId)
    return deleted(assertionId, "Assertion deleted")
