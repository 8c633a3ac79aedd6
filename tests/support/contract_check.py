"""Every answer a test gets from the app, checked against the contract: its status is one the
operation declares, and a JSON body fits that response's schema. A handler whose answer drifts
from its schema fails its own tests, not only the schemathesis run.

What is checked: any request whose path and method are an operation of the contract. What is not:
other paths (a 404 for no route, /metrics, the served document), a method the path does not have
(405), HEAD, and bodies that are not JSON (an export, a recording), whose status is still checked.
"""
from __future__ import annotations

import functools
import re

import orjson
from openapi_schema_validator import OAS30Validator, oas30_format_checker
from starlette.routing import compile_path

from api.contract import BASE_PATH, operations


class ContractDrift(AssertionError):
    pass


@functools.cache
def _routes() -> list[tuple[re.Pattern, str, object]]:
    # Fixed paths before templated ones: /call/export is not /call/{callId}.
    ordered = sorted(operations(), key=lambda op: op.path.count("{"))
    return [(compile_path(BASE_PATH + op.path)[0], op.method.upper(), op) for op in ordered]


def operation_of(method: str, path: str):
    matched = [op for regex, verb, op in _routes() if regex.match(path)]
    if not matched:
        return None
    first_path = matched[0].path  # the path that routes, among those that match
    return next((op for op in matched if op.path == first_path and op.method.upper() == method), None)


def _null_allowed(schema):
    """``nullable: true`` as generated clients read it (openapi-typescript: ``T | null``), also
    beside an ``enum`` or an ``allOf``, where a strict OpenAPI 3.0 validator would not allow null."""
    if isinstance(schema, list):
        return [_null_allowed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    schema = {key: _null_allowed(value) for key, value in schema.items()}
    if schema.get("nullable") is True and ("enum" in schema or "allOf" in schema or "oneOf" in schema):
        return {"anyOf": [{k: v for k, v in schema.items() if k != "nullable"}, {"enum": [None]}]}
    return schema


@functools.cache
def _validator(operation_id: str, status: str):
    op = next(op for op in operations() if op.operation_id == operation_id)
    schema = op.spec["responses"][status]["content"]["application/json"]["schema"]
    return OAS30Validator(_null_allowed(schema), format_checker=oas30_format_checker)


def check(method: str, path: str, status_code: int, content_type: str, body: bytes) -> None:
    """Raises ContractDrift when the answer is not one the contract declares."""
    op = operation_of(method.upper(), path)
    if op is None:
        return
    responses = op.spec["responses"]
    status = str(status_code)
    if status not in responses:
        raise ContractDrift(f"{op.operation_id} answered {status_code}, which it does not declare "
                            f"({', '.join(responses)}): {body[:300]!r}")
    declared = responses[status].get("content", {})
    if not content_type.startswith("application/json"):
        return
    if "application/json" not in declared:
        raise ContractDrift(f"{op.operation_id} answered {status_code} in JSON, which that response does not declare")
    errors = sorted(_validator(op.operation_id, status).iter_errors(orjson.loads(body)), key=lambda e: list(e.path))
    if errors:
        where = "/".join(str(p) for p in errors[0].path)
        raise ContractDrift(f"{op.operation_id} {status_code} drifts from its schema at {where or 'the top'}: "
                            f"{errors[0].message}")
