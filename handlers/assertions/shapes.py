"""The wire shapes of unit tests: a suite with its assignments, an assertion, an assignment."""
from __future__ import annotations

from handlers.wire import iso
from models.assertions.assertions import AssertionRecord
from models.assertions.assignments import AssignmentRecord
from models.assertions.suites import SuiteRecord


def assignment_shape(record: AssignmentRecord) -> dict:
    return {"suiteId": record.suite_id, "entityType": record.entity_type, "entityId": record.entity_id,
            "entityName": record.entity_name, "assignedBy": record.assigned_by,
            "assignedAt": iso(record.assigned_at)}


def suite_shape(record: SuiteRecord, assigned: list[AssignmentRecord]) -> dict:
    return {"id": record.id, "workspaceId": record.workspace_id, "name": record.name,
            "description": record.description, "assertionCount": record.assertion_count,
            "assignments": [assignment_shape(a) for a in assigned], "createdBy": record.created_by,
            "createdAt": iso(record.created_at), "updatedAt": iso(record.updated_at)}


def assertion_shape(record: AssertionRecord) -> dict:
    # The kind's parameters beside its name and kind, as a request gives them.
    return {"id": record.id, "suiteId": record.suite_id, "name": record.name, "kind": record.kind, **record.params,
            "createdBy": record.created_by, "createdAt": iso(record.created_at),
            "updatedAt": iso(record.updated_at)}
