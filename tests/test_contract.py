"""The OpenAPI document: valid, and complete in what every operation must state."""
from __future__ import annotations

import re
from importlib import import_module

import pytest
import yaml
from openapi_spec_validator import validate

from api.app import SPEC_DIR, SPEC_FILE
from models.permissions import CATALOG

SPEC = yaml.safe_load((SPEC_DIR / SPEC_FILE).read_text())
OPERATIONS = [(path, method, op) for path, item in SPEC["paths"].items()
              for method, op in item.items() if method in ("get", "post", "put", "patch", "delete")]
IDS = [op["operationId"] for *_, op in OPERATIONS]


def resolve(ref: str) -> dict:
    node = SPEC
    for part in ref.lstrip("#/").split("/"):
        node = node[part]
    return node


def test_the_document_is_valid_openapi():
    validate(SPEC)


def test_version_and_base_path():
    assert SPEC["info"]["version"] == "2.0.0" and SPEC["servers"][0]["url"] == "/api/v2"


def test_permission_enum_is_the_catalog():
    assert SPEC["components"]["schemas"]["Permission"]["enum"] == list(CATALOG)


@pytest.mark.parametrize("path, method, op", OPERATIONS, ids=IDS)
def test_operation_resolves_to_a_handler(path, method, op):
    module = import_module(op["x-openapi-router-controller"])
    assert callable(getattr(module, re.sub(r"(?<!^)(?=[A-Z])", "_", op["operationId"]).lower()))


@pytest.mark.parametrize("path, method, op", OPERATIONS, ids=IDS)
def test_operation_states_success_envelope_errors_and_examples(path, method, op):
    success = op["responses"]["200"]["content"]["application/json"]
    schema = resolve(success["schema"]["$ref"])
    assert set(schema["required"]) == {"success", "data"}
    assert {"message", "result"} <= set(schema["properties"]["data"]["required"])
    for status in ("401", "429", "500"):
        assert status in op["responses"], f"{op['operationId']} lacks {status}"
    if op.get("parameters") or "requestBody" in op:
        assert "400" in op["responses"]
    if "x-permission" in op:
        assert op["x-permission"] in CATALOG and "403" in op["responses"]
        assert op["x-permission"] in op["description"]
    for status, response in op["responses"].items():
        if status != "200":
            target = resolve(response["$ref"]) if "$ref" in response else response
            assert target["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorEnvelope")
    has_example = ("examples" in success or "example" in success
                   or any("example" in p or "$ref" in p for p in op.get("parameters", []))
                   or "examples" in op.get("requestBody", {}).get("content", {}).get("application/json", {}))
    assert has_example, op["operationId"]
    if "requestBody" in op:
        assert "examples" in op["requestBody"]["content"]["application/json"]


def test_links_feed_created_ids_to_the_operations_that_take_them():
    links = SPEC["paths"]["/api-keys"]["post"]["responses"]["200"]["links"]
    assert {link["operationId"] for link in links.values()} == {"getApiKey", "deleteApiKeys"}
