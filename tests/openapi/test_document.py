"""The contract: a valid OpenAPI document, bundled from its files, complete in what every operation states.

Every rule here holds for each operation the contract lists, so a new group is checked as it lands.
The conventions every operation follows (paths, lists, deletes, ids, permissions, error codes) are
in test_convention.py.
"""
from __future__ import annotations

import json
from importlib import import_module

import pytest
import yaml
from models.identity.permissions import CATALOG
from openapi_spec_validator import validate

from api.contract import BUNDLED, SPEC_DIR, SPEC_FILE, bundle, document, operations
from tests.support.examples import takes_json

OPERATIONS = operations()
IDS = [o.operation_id for o in OPERATIONS]
ENVELOPE_STATUSES = ("401", "429", "500", "503")


def test_the_bundled_document_is_valid_openapi_with_no_reference_left():
    validate(document())
    assert "$ref" not in json.dumps(document())


def test_the_bundle_resolves_to_what_connexion_makes_of_the_files():
    """api.contract bundles the files itself (connexion took seconds to): the resolved document
    is the one connexion's own resolution of the root file's references gives."""
    from connexion.json_schema import resolve_refs
    by_connexion = resolve_refs(yaml.safe_load(SPEC_FILE.read_text()), base_uri=f"{SPEC_DIR}/")
    assert document() == by_connexion
    # Each file once, its references pointing inside the bundle.
    bundled = bundle()
    assert all(ref.startswith("#/") for ref in _refs(bundled))
    assert set(bundled[BUNDLED]) >= {"components.parameters", "components.responses", "schemas.agents"}


def test_connexion_accepts_the_document_it_is_not_asked_to_check_at_start():
    """The app skips connexion's check of the contract against the OpenAPI schema, with each
    default checked against its own schema (api.contract.ContractSpecification): made here."""
    from connexion.spec import OpenAPISpecification, Specification
    Specification.__dict__["_validate_spec"].__func__(OpenAPISpecification, document())


def _refs(node):
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def test_the_root_lists_groups_and_every_file_is_used():
    """Paths live in openapi/paths/<group>.yaml, and every file under openapi/ is reached from another."""
    root = yaml.safe_load(SPEC_FILE.read_text())
    assert all(set(item) == {"$ref"} for item in root["paths"].values())
    targets = set()
    for path in SPEC_DIR.rglob("*.yaml"):
        for ref in _refs(yaml.safe_load(path.read_text())):
            file_part = ref.split("#", 1)[0]
            if file_part:
                targets.add((path.parent / file_part).resolve())
    assert targets == {p.resolve() for p in SPEC_DIR.rglob("*.yaml")} - {SPEC_FILE.resolve()}


def test_version_and_base_path():
    assert document()["info"]["version"] == "2.0.0" and document()["servers"][0]["url"] == "/api/v2"


def test_the_license_is_the_one_the_project_ships():
    import configparser
    setup = configparser.ConfigParser()
    setup.read(SPEC_DIR.parent / "setup.cfg")
    license_ = document()["info"]["license"]
    assert license_["name"] == setup["metadata"]["license"] == "Apache-2.0"
    assert license_["url"] == "https://www.apache.org/licenses/LICENSE-2.0"
    assert "Apache License\n                           Version 2.0" in (SPEC_DIR.parent / "LICENSE").read_text()


def test_permission_enum_is_the_catalog():
    shared = yaml.safe_load((SPEC_DIR / "components" / "schemas.yaml").read_text())
    assert shared["Permission"]["enum"] == list(CATALOG)


def test_operation_ids_are_unique():
    assert len(set(IDS)) == len(IDS)


@pytest.mark.parametrize("op", OPERATIONS, ids=IDS)
def test_operation_resolves_to_a_handler(op):
    assert callable(getattr(import_module(op.controller), op.handler_name))


def _data_schema(response: dict) -> dict:
    """The merged properties and required names of an envelope's ``data``, through its allOfs."""
    schema = response["content"]["application/json"]["schema"]
    parts = schema.get("allOf", [schema])
    required = {name for part in parts for name in part.get("required", [])}
    data = next(part["properties"]["data"] for part in parts if "data" in part.get("properties", {}))
    data_parts = data.get("allOf", [data])
    return {"envelope_required": required,
            "data_required": {name for part in data_parts for name in part.get("required", [])},
            "properties": {name for part in data_parts for name in part.get("properties", {})}}


@pytest.mark.parametrize("op", OPERATIONS, ids=IDS)
def test_operation_states_success_envelope_errors_and_examples(op):
    responses = op.spec["responses"]
    if op.spec.get("x-raw-response"):
        # A file or a stream (an export, a recording): its 200 is not an envelope; its errors are.
        assert "application/json" not in responses["200"]["content"], op.operation_id
    else:
        success = _data_schema(responses["200"])
        assert success["envelope_required"] == {"success", "data"}
        assert {"message", "result"} <= success["data_required"] == success["properties"]
    for status in ENVELOPE_STATUSES:
        assert status in responses, f"{op.operation_id} lacks {status}"
    assert "Retry-After" in responses["429"]["headers"] and "Retry-After" in responses["503"]["headers"]
    assert "400" in responses  # unknown query parameters are refused on every operation
    for permission in op.permission_rule.permissions:
        assert permission in CATALOG and "403" in responses
        assert permission in op.spec["description"]
    for status, response in responses.items():
        if status not in ("200", "206"):  # 206: a part of a file
            schema = response["content"]["application/json"]["schema"]
            assert set(schema["properties"]["data"]["required"]) == {"message", "code"} and schema["properties"]["success"]["enum"] == [False]
    for parameter in op.parameters:
        if parameter.get("required"):
            assert "example" in parameter or parameter["name"] == "workspaceId" or "example" in parameter["schema"], \
                f"{op.operation_id}: required {parameter['name']} needs an example (the tests send it)"
    if op.streams_body:  # an upload: the file itself, of the media types it names
        assert "application/json" not in op.spec["requestBody"]["content"], op.operation_id
    elif "requestBody" in op.spec:  # JSON, or a text file (a CSV) under its own media type
        assert next(iter(op.spec["requestBody"]["content"].values()))["examples"]


def test_links_feed_created_ids_to_the_operations_that_take_them():
    links = document()["paths"]["/api-keys"]["post"]["responses"]["200"]["links"]
    assert {link["operationId"] for link in links.values()} == {"getApiKey", "deleteApiKeys"}


def _strings(schema):
    """Every string schema inside ``schema``."""
    if not isinstance(schema, dict):
        return
    if schema.get("type") == "string":
        yield schema
    for key in ("items", "additionalProperties"):
        yield from _strings(schema.get(key))
    for value in schema.get("properties", {}).values():
        yield from _strings(value)
    for key in ("allOf", "anyOf", "oneOf"):
        for part in schema.get(key, []):
            yield from _strings(part)


# What no request string may hold (models.kernel.text): the rule the server applies to every operation,
# which the contract must state too, or generated clients and tests would send it as valid.
# (Unpaired surrogates, refused too, are no characters of a UTF-8 string: no need to state them.)
REFUSED = ["\x00", "\x01", "\x1f", "\x7f", "\x85", "\x9f"]


@pytest.mark.parametrize("op", OPERATIONS, ids=IDS)
def test_every_string_a_request_carries_refuses_control_characters(op):
    """An enum, a format, or a pattern that refuses them (the server applies a pattern's closing
    ``$`` as the end of the value, as ECMA regexes do)."""
    from api.validation import compiled_pattern
    schemas = [p["schema"] for p in op.parameters]
    if takes_json(op):  # an upload carries no string; a text file's cells are the domain's to check
        schemas.append(op.spec["requestBody"]["content"]["application/json"]["schema"])
    for schema in schemas:
        for string in _strings(schema):
            if "enum" in string or "format" in string:
                continue
            assert "pattern" in string, f"{op.operation_id}: a string without a pattern: {string}"
            for bad in REFUSED:
                for value in (bad + "ab", "a" + bad + "b", "ab" + bad):
                    assert compiled_pattern(string["pattern"]).search(value) is None, \
                        f"{op.operation_id}: {string} lets {value!r} through"


def test_the_one_line_rule_of_ids_is_the_one_the_validator_names():
    from api.validation import ONE_LINE_PATTERN
    shared = yaml.safe_load((SPEC_DIR / "components" / "schemas.yaml").read_text())
    assert shared["Id"]["pattern"] == ONE_LINE_PATTERN
