"""The check every test client applies to the app's answers (tests/support/contract_check.py) refuses what
drifts from the contract, and only that."""
from __future__ import annotations

import orjson
import pytest

from tests.support.contract_check import ContractDrift, check, operation_of

KEYS = "/api/v2/api-keys"
PAGE = {"success": True, "data": {"message": "OK", "result": {"apiKeys": [],
                                                              "pagination": {"total": 0, "limit": 20, "offset": 0}}}}
ERROR = {"success": False, "data": {"message": "No API key.", "code": "not_found", "result": None}}


def test_an_answer_as_declared_passes():
    check("GET", KEYS, 200, "application/json", orjson.dumps(PAGE))
    check("GET", KEYS + "/0b8e6a52-1f8e-4c8a-a0b6-0c2a5c1d9e11", 404, "application/json", orjson.dumps(ERROR))


def test_a_status_the_operation_does_not_declare_fails():
    with pytest.raises(ContractDrift, match="418"):
        check("GET", KEYS, 418, "application/json", orjson.dumps(ERROR))


@pytest.mark.parametrize("body", [
    {**PAGE, "data": {"message": "OK", "result": {"apiKeys": []}}},  # no pagination
    {"success": False, "data": {"message": "No API key.", "result": None}},  # no code
    {"success": False, "data": {"message": "No API key.", "code": "nope", "result": None}},  # a code not listed
])
def test_a_body_that_drifts_from_its_schema_fails(body):
    status = 200 if body["success"] else 404
    with pytest.raises(ContractDrift):
        check("GET", KEYS if status == 200 else KEYS + "/0b8e6a52-1f8e-4c8a-a0b6-0c2a5c1d9e11", status,
              "application/json", orjson.dumps(body))


def test_fixed_paths_route_before_templated_ones_and_other_paths_are_left_alone():
    assert operation_of("GET", "/api/v2/call/export").operation_id == "exportCalls"
    assert operation_of("GET", "/api/v2/call/0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f").operation_id == "getCall"
    assert operation_of("PUT", KEYS) is None and operation_of("GET", "/api/v2/no-such-thing") is None
    check("GET", "/metrics", 200, "text/plain", b"")
