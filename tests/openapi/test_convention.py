"""The contract's conventions, checked over every operation, so that a new group follows them as it
lands: the shape of paths, of time ranges, of deletes and lists, ids, permissions, shared path
parameters, the error codes, and no reference to a document users do not have.
"""
from __future__ import annotations

import ast
import pkgutil
import re
import subprocess
from importlib import import_module
from pathlib import Path

import pytest
import yaml

from api.contract import SPEC_DIR, document, operations
from models.identity.permissions import CATALOG

ROOT = SPEC_DIR.parent
OPERATIONS = operations()
IDS = [o.operation_id for o in OPERATIONS]

# Collections are plural (/agents/{agentId}), but for a few first segments: /call/... and
# /campaign/..., the paths the documented API has always had (clients call them so), and
# /workspace, the one workspace a request acts in (a singleton, not a collection).
# /chat/{entityType}/{entityId}/sessions: a feature, not a collection (what follows is the kind
# of entity chatted with; its collection is sessions). /shared/calls/{token}: what share links show,
# a feature too (its collection is calls). /auth/sign-in, /auth/mfa: the caller's own signing in and
# second factor, steps rather than a collection.
SINGULAR_FIRST_SEGMENTS = frozenset({"call", "campaign", "workspace", "chat", "shared", "auth"})
# /custom/abbreviations: the workspace's vocabulary under the documented API's custom convenience
# endpoints (its collection is abbreviations); /speech-filter/preview: a feature, not a collection.
SINGULAR_FIRST_SEGMENTS |= {"custom", "speech-filter"}
# /audio: a mass noun, the library of a workspace.
SINGULAR_FIRST_SEGMENTS |= {"audio"}

# A time range on a list, or on anything else, is since (inclusive) and until (exclusive).
TIME_RANGE = ("since", "until")

# Delete results the documented API spells its own way; every other DELETE answers Deleted.
DOCUMENTED_DELETE_RESULTS = {
    "deleteApiKeys": {"success", "deletedCount"},
    "removeCallTag": {"success", "message"},
}

# Ids that are no UUIDs of ours: a structured-data field's is an integer (the analytics result
# numbers them so); a role is a built-in one's name or a custom one's UUID; an audit entry's
# resource may be any of those; an operationId names an operation of the contract; a voice is the
# speech provider's name for it; a workflow's nodes are named by the workflow's author.
NON_UUID_IDS = {"insightId": "integer", "structuredDataIds": "integer", "insightIds": "integer", "fieldId": "integer",
                "roleId": "role", "resourceId": "any", "operationId": "the contract's",
                "config.voice.voiceId": "provider's", "config.nodes.id": "author's"}


def _resolved(file: Path, pointer: str):
    """The schema at ``file#/pointer`` with its $refs resolved, as the bundled document has it."""
    node = yaml.safe_load(file.read_text())
    for key in pointer.strip("/").split("/"):
        node = node[key.replace("~1", "/")]
    return _resolve(node, file)


def _resolve(node, file: Path):
    if isinstance(node, dict):
        if "$ref" in node:
            target, _, pointer = node["$ref"].partition("#")
            return _resolved((file.parent / target).resolve() if target else file, pointer)
        return {key: _resolve(value, file) for key, value in node.items()}
    if isinstance(node, list):
        return [_resolve(value, file) for value in node]
    return node


SHARED_PARAMETERS = SPEC_DIR / "components" / "parameters.yaml"
SHARED_SCHEMAS = SPEC_DIR / "components" / "schemas.yaml"


def _result(op) -> dict:
    schema = op.spec["responses"]["200"]["content"]["application/json"]["schema"]
    for part in schema.get("allOf", [schema]):
        data = part.get("properties", {}).get("data")
        for data_part in (data.get("allOf", [data]) if data else []):
            if "result" in data_part.get("properties", {}):
                return data_part["properties"]["result"]
    raise AssertionError(f"{op.operation_id}: no result schema")


def _static_segments(path: str) -> list[tuple[str, bool]]:
    """Each fixed segment, and whether a parameter follows it (it names a collection then)."""
    parts = path.strip("/").split("/")
    return [(part, i + 1 < len(parts) and parts[i + 1].startswith("{"))
            for i, part in enumerate(parts) if not part.startswith("{")]


@pytest.mark.parametrize("path", sorted(document()["paths"]))
def test_collections_are_plural(path):
    first = path.strip("/").split("/")[0]
    assert first.endswith("s") or first in SINGULAR_FIRST_SEGMENTS, path
    for segment, names_a_collection in _static_segments(path):
        if names_a_collection and segment not in SINGULAR_FIRST_SEGMENTS:
            assert segment.endswith("s"), f"{path}: {segment} names a collection: plural"


def test_the_plural_rule_refuses_a_singular_collection():
    assert ("agent", True) in _static_segments("/agent/{agentId}")
    assert not "agent".endswith("s") and "agent" not in SINGULAR_FIRST_SEGMENTS


@pytest.mark.parametrize("op", OPERATIONS, ids=IDS)
def test_time_ranges_are_since_and_until_shared(op):
    moments = [p for p in op.parameters if p["in"] == "query" and p["schema"].get("format") in ("date-time", "date")]
    names = {p["name"] for p in moments}
    assert names <= set(TIME_RANGE), f"{op.operation_id}: a time range is {TIME_RANGE}, not {names}"
    assert names in (set(), set(TIME_RANGE)), f"{op.operation_id}: both ends of the range, or neither"
    for parameter in moments:
        assert parameter == _resolved(SHARED_PARAMETERS, parameter["name"].capitalize())


@pytest.mark.parametrize("op", [o for o in OPERATIONS if o.method == "delete"],
                         ids=[o.operation_id for o in OPERATIONS if o.method == "delete"])
def test_deletes_answer_the_shared_result(op):
    result = _result(op)
    if op.operation_id in DOCUMENTED_DELETE_RESULTS:
        assert set(result["required"]) == DOCUMENTED_DELETE_RESULTS[op.operation_id]
        return
    deleted = _resolved(SHARED_SCHEMAS, "Deleted")
    assert result == deleted or result.get("allOf", [None])[0] == deleted, op.operation_id


def _id_names(schema: dict, prefix: str = ""):
    """(name, schema) of each property of a request body that holds an id, at any depth."""
    if not isinstance(schema, dict):
        return
    for part in schema.get("allOf", []) + schema.get("oneOf", []) + schema.get("anyOf", []):
        yield from _id_names(part, prefix)
    if "items" in schema:
        yield from _id_names(schema["items"], prefix)
    for name, value in schema.get("properties", {}).items():
        if re.fullmatch(r"id|ids|\w+Ids?", name):
            yield prefix + name, value
        yield from _id_names(value, f"{prefix}{name}.")


# A live call's id is its runtime's (as Retell's call_... ids are): one schema states its rule.
RUNTIME_CALL_ID = _resolved(SPEC_DIR / "schemas" / "live-calls.yaml", "RuntimeCallId")


def _uuid_or_allowed(name: str, schema: dict) -> bool:
    """``name``: a parameter's, or a body property's dotted path (``config.nodes.id``)."""
    if name == "callId" and schema == RUNTIME_CALL_ID:
        return True
    item = schema.get("items", schema)
    parts = [item, *item.get("allOf", [])]
    kind = NON_UUID_IDS.get(name, NON_UUID_IDS.get(name.rsplit(".", 1)[-1]) if "." not in name else None)
    if kind == "integer":
        return any(part.get("type") == "integer" for part in parts)
    if kind:
        return True
    return any(part.get("format") == "uuid" for part in parts)


@pytest.mark.parametrize("op", OPERATIONS, ids=IDS)
def test_ids_are_uuids(op):
    for parameter in op.parameters:
        if re.fullmatch(r"id|ids|\w+Ids?", parameter["name"]):
            assert _uuid_or_allowed(parameter["name"], parameter["schema"]), (op.operation_id, parameter["name"])
    content = op.spec.get("requestBody", {}).get("content", {}).get("application/json")
    if content:
        for name, schema in _id_names(content["schema"]):
            assert _uuid_or_allowed(name, schema), (op.operation_id, name, schema)


def _is_list(op) -> bool:
    return op.operation_id.startswith("list")


@pytest.mark.parametrize("op", OPERATIONS, ids=IDS)
def test_lists_take_the_shared_limit_and_offset_and_answer_pagination(op):
    if op.spec.get("x-raw-response"):
        assert not op.parameter("limit"), op.operation_id
        return
    result = _result(op)
    if _is_list(op) or op.parameter("limit") or "pagination" in result.get("properties", {}):
        assert _is_list(op) and op.method == "get", f"{op.operation_id}: a list is named list..."
        assert op.parameter("limit") == _resolved(SHARED_PARAMETERS, "Limit"), op.operation_id
        assert op.parameter("offset") == _resolved(SHARED_PARAMETERS, "Offset"), op.operation_id
        assert result["properties"]["pagination"] == _resolved(SHARED_SCHEMAS, "Pagination")
        assert "pagination" in result["required"]


@pytest.mark.parametrize("op", OPERATIONS, ids=IDS)
def test_every_operation_names_its_permission_or_why_it_needs_none(op):
    public = op.spec.get("x-public")
    assert bool(op.permission_rule.permissions) != bool(public), \
        f"{op.operation_id}: x-permission, or x-public saying why none is needed (never both)"
    if public:
        assert isinstance(public, str) and len(public.split()) >= 4, op.operation_id
    for permission in op.spec.get("x-conditional-permissions", []):
        assert permission in CATALOG and permission in op.spec["description"], (op.operation_id, permission)


SHARED_RESPONSES = SPEC_DIR / "components" / "responses.yaml"
ANONYMOUS = [o for o in OPERATIONS if not o.secured]


@pytest.mark.parametrize("op", ANONYMOUS, ids=[o.operation_id for o in ANONYMOUS])
def test_every_operation_without_a_credential_says_why_and_documents_its_rate_limit(op):
    """Each is limited per client address (api.authorization): its 429 is the shared one, with
    Retry-After and the RateLimit headers, as a client of any other operation gets it."""
    assert op.spec.get("security") == [] and op.spec.get("x-public"), op.operation_id
    assert op.spec["responses"].get("429") == _resolved(SHARED_RESPONSES, "TooManyRequests"), op.operation_id
    assert {"Retry-After", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} \
        <= set(op.spec["responses"]["429"]["headers"])


def _contract_permissions() -> set[str]:
    named = set()
    for op in OPERATIONS:
        named.update(op.permission_rule.permissions, op.spec.get("x-conditional-permissions", []))
    return named


def _permissions_in_code() -> dict[str, set[str]]:
    """Each permission of the catalog that the management API's code spells (so checks), by file.
    models/permissions.py defines them, the migrations grant them: neither checks."""
    found: dict[str, set[str]] = {}
    for package in ("api", "handlers", "models"):
        for file in (ROOT / package).rglob("*.py"):
            if file.name == "permissions.py" or "migrations" in file.parts:
                continue
            for node in ast.walk(ast.parse(file.read_text())):
                if isinstance(node, ast.Constant) and node.value in CATALOG:
                    found.setdefault(node.value, set()).add(str(file.relative_to(ROOT)))
    return found


def test_every_permission_the_code_checks_is_named_by_the_contract():
    in_code = _permissions_in_code()
    assert {"calls:pii", "api-keys:manage-others"} <= set(in_code)  # the scan finds what it is for
    missing = {p: files for p, files in in_code.items() if p not in _contract_permissions()}
    assert not missing, f"checked in code, named by no operation (x-permission, x-conditional-permissions): {missing}"


@pytest.mark.parametrize("op", OPERATIONS, ids=IDS)
def test_path_parameters_are_shared(op):
    """In the contract's own files: each path parameter a $ref to components/parameters.yaml."""
    raw = _raw_operation(op)
    for parameter in raw.get("parameters", []):
        if "$ref" in parameter:
            target = parameter["$ref"]
            if _resolve(parameter, _file_of(op)).get("in") == "path":
                assert target.split("#")[0].endswith("components/parameters.yaml"), (op.operation_id, target)
        else:
            assert parameter.get("in") != "path", f"{op.operation_id}: {parameter['name']} is copied inline"


def _file_of(op) -> Path:
    root = yaml.safe_load((SPEC_DIR / "management.yaml").read_text())
    return (SPEC_DIR / root["paths"][op.path]["$ref"].split("#")[0]).resolve()


def _raw_operation(op) -> dict:
    return yaml.safe_load(_file_of(op).read_text())[op.path][op.method]


# --- errors ------------------------------------------------------------------------------------

def _error_codes_the_code_emits() -> set[str]:
    from api.envelope import OTHER_CODES, STATUS_CODES
    from models.kernel.errors import DomainError
    for package in ("api", "handlers", "models"):
        for module in pkgutil.walk_packages([str(ROOT / package)], prefix=f"{package}."):
            import_module(module.name)
    kinds, pending = set(), [DomainError]
    while pending:
        kind = pending.pop()
        kinds.add(kind)
        pending.extend(kind.__subclasses__())
    return {kind.code for kind in kinds} | set(STATUS_CODES.values()) | set(OTHER_CODES)


@pytest.mark.parametrize("op", [o for o in OPERATIONS if "requestBody" in o.spec],
                         ids=[o.operation_id for o in OPERATIONS if "requestBody" in o.spec])
def test_every_operation_taking_a_body_answers_415(op):
    """A body without a Content-Type, or of another type, is refused (api.validation)."""
    assert "415" in op.spec["responses"], f"{op.operation_id} takes a body but lists no 415"


def test_the_error_codes_listed_are_those_the_code_emits():
    listed = yaml.safe_load(SHARED_SCHEMAS.read_text())["ErrorCode"]["enum"]
    assert len(listed) == len(set(listed))
    assert set(listed) == _error_codes_the_code_emits()
    description = yaml.safe_load(SHARED_SCHEMAS.read_text())["ErrorCode"]["description"]
    assert all(f"`{code}`" in description for code in listed)


@pytest.mark.parametrize("op", OPERATIONS, ids=IDS)
def test_every_error_answer_carries_a_listed_code(op):
    codes = _resolved(SHARED_SCHEMAS, "ErrorCode")
    for status, response in op.spec["responses"].items():
        if status.startswith(("4", "5")):
            data = response["content"]["application/json"]["schema"]["properties"]["data"]
            assert "code" in data["required"] and data["properties"]["code"] == codes, (op.operation_id, status)


# --- words -------------------------------------------------------------------------------------

def test_no_file_refers_to_a_document_users_do_not_have():
    name = "SP" + "EC"  # spelled apart, so that this file does not hold it either
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    offenders = []
    for file in files:
        path = ROOT / file
        if not path.is_file() or path.suffix in (".wav", ".mp3", ".flac", ".ogg", ".bin", ".png", ".gz"):
            continue
        text = path.read_text(errors="ignore")
        if re.search(rf"{name}\.md|\b{name}\b", text, flags=0) or re.search(rf"{name.lower()}\.md", text):
            offenders.append(file)
    assert not offenders


def _optional_data(node, where: str) -> list[str]:
    """Each object schema under ``node`` that declares ``data`` without requiring it."""
    found = []
    if isinstance(node, dict):
        if "data" in (node.get("properties") or {}) and "data" not in (node.get("required") or []):
            found.append(where)
        for key, value in node.items():
            found += _optional_data(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _optional_data(value, f"{where}/{index}")
    return found


def test_every_envelope_requires_the_data_it_declares():
    # Generators that read each part of an allOf alone (openapi-typescript) would type it optional,
    # and every client would have to check for a field that is always there.
    optional = []
    for path in sorted((SPEC_DIR).rglob("*.yaml")):
        optional += _optional_data(yaml.safe_load(path.read_text()), str(path.relative_to(SPEC_DIR)))
    assert optional == []


def test_the_data_rule_finds_an_optional_data():
    assert _optional_data({"allOf": [{"type": "object", "properties": {"data": {}}}]}, "x") == ["x/allOf/0"]
