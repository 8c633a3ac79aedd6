"""Hostile input gets 400 naming the parameter or field, never a 500, the same on both databases.

The requests are built from the contract (api.contract: each operation's parameters and body
example), so an operation added to openapi/ is attacked here without a line of its own.
"""
from __future__ import annotations

import json
import logging
from urllib.parse import quote

import pytest

from api.contract import Operation, operations
from api.validation import MAX_BODY_DEPTH, MAX_MESSAGE_CHARS
from tests.support.examples import encoded, example_request, takes_json

OPERATIONS = operations()
IDS = [o.operation_id for o in OPERATIONS]
# JSON bodies; an upload's body is a file, whose limits tests/handlers/test_call_recordings.py tries.
BODY_OPERATIONS = [o for o in OPERATIONS if takes_json(o)]

# Characters no string of a request may hold, at the start, inside and at the end of a value.
CONTROL = ["\x00", "\x01", "\x1b", "\x1f", "\x7f", "\x85", "\x9f"]
LINE_BREAKS = ["\t", "\n", "\r"]  # free text only; ids, names and parameters are one line
SURROGATES = ["\ud800", "\udbff", "\udc00", "\udfff"]  # unpaired; only a JSON escape can carry one


def placed(value: str, bad: str) -> list[str]:
    return [bad + value, value[:1] + bad + value[1:], value + bad]


def send(platform, op: Operation, owner, *, path=None, query=None, body=None, raw: bytes | None = None):
    default_path, default_query, default_body = example_request(op, owner.workspace_id, largest_body=True)
    content, content_headers = encoded(op, default_body if body is None else body)
    if raw is not None:
        content, content_headers = raw, {"Content-Type": "application/json"}
    headers = {**owner.headers, **content_headers}
    return platform.client.request(op.method.upper(), "/api/v2" + (path or default_path),
                                   params=default_query if query is None else query, headers=headers, content=content)


def assert_refused(response, *names: str) -> str:
    assert response.status_code == 400, response.text
    body = response.json()
    message = body["data"]["message"]
    assert body["success"] is False and len(message) <= MAX_MESSAGE_CHARS, message
    for name in names:
        assert name in message, message
    assert not any(bad in message for bad in CONTROL + SURROGATES), message
    return message


def string_parameters(op: Operation) -> list[dict]:
    """Every parameter: on the wire each is a string, whatever its schema makes of it."""
    return [p for p in op.parameters if p["in"] in ("path", "query")]


# The walks below send every operation's refused requests to one app (a refused request changes
# nothing; an app per operation cost them most of their time), thousands of them with one
# credential: the per-credential limit is off (tests/api/test_rate_limits.py tests it).
UNLIMITED = [{"rate_limits_enabled": False}]


def each_operation(platform, ops, check) -> None:
    """``check(owner, op)`` for every operation, in one workspace; every operation that fails it named."""
    owner = platform.workspace()
    wrong = []
    for op in ops:
        try:
            check(owner, op)
        except AssertionError as exc:
            wrong.append(f"{op.operation_id}: {str(exc)[:300]}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("settings_overrides", UNLIMITED)
def test_a_control_character_in_any_parameter_is_400_naming_it(platform):
    each_operation(platform, [o for o in OPERATIONS if string_parameters(o)],
                   lambda owner, op: parameters_refused(platform, owner, op))


def parameters_refused(platform, owner, op) -> None:
    default_path, default_query, _ = example_request(op, owner.workspace_id, largest_body=True)
    for parameter in string_parameters(op):
        name = parameter["name"]
        value = owner.workspace_id if name == "workspaceId" else str(parameter.get("example", "1"))
        if isinstance(parameter.get("example"), list):
            value = str(parameter["example"][0])
        # Each character once, at the start, inside or at the end in turn (as for body strings).
        for turn, bad in enumerate(CONTROL + LINE_BREAKS):
            for candidate in placed(value, bad)[turn % 3:turn % 3 + 1]:
                if parameter["in"] == "path":
                    path = op.path.replace("{" + name + "}", quote(candidate, safe=""))
                    for other in op.parameters:
                        if other["in"] == "path" and other["name"] != name:
                            path = path.replace("{" + other["name"] + "}", str(other["example"]))
                    response = send(platform, op, owner, path=path)
                    if "\n" in candidate and response.status_code == 404:
                        # Starlette's mount of /api/v2 matches no path that holds a line break:
                        # no route, so nothing reads the value.
                        continue
                else:
                    response = send(platform, op, owner, path=default_path, query={**default_query, name: candidate})
                assert_refused(response, name)


def declares_strings(schema: dict, depth: int = 0) -> bool:
    """Whether a (resolved) body schema lets any value be a string."""
    if depth > 20 or not isinstance(schema, dict):
        return False
    if schema.get("type") == "string" or ("type" not in schema and not any(
            key in schema for key in ("properties", "items", "allOf", "oneOf", "anyOf"))):
        return True
    nested = [*schema.get("properties", {}).values(), *schema.get("allOf", []), *schema.get("oneOf", []),
              *schema.get("anyOf", [])]
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            nested.append(schema[key])
    return any(declares_strings(child, depth + 1) for child in nested)


def body_strings(value, where=()):
    """The path of every string in a body example (an object's fields, an array's items)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from body_strings(item, where + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from body_strings(item, where + (index,))
    elif isinstance(value, str):
        yield where


def replaced(body, where, new):
    copy = json.loads(json.dumps(body))
    target = copy
    for step in where[:-1]:
        target = target[step]
    target[where[-1]] = new(target[where[-1]])
    return copy


# A body of integers only (a list of ids) has no string to attack; the schema bounds its numbers.
STRING_BODY_OPERATIONS = [o for o in BODY_OPERATIONS
                          if declares_strings(o.spec["requestBody"]["content"]["application/json"]["schema"])]


@pytest.mark.parametrize("settings_overrides", UNLIMITED)
def test_a_control_character_or_unpaired_surrogate_in_any_body_string_is_400_naming_the_field(platform):
    each_operation(platform, STRING_BODY_OPERATIONS, lambda owner, op: body_strings_refused(platform, owner, op))


def body_strings_refused(platform, owner, op) -> None:
    _, _, body = example_request(op, owner.workspace_id, largest_body=True)
    fields = list(body_strings(body))
    assert fields, f"{op.operation_id}: the body example has no string to attack"
    for where in fields:
        field = ".".join(map(str, where))
        # Each character once, at the start, inside or at the end in turn: every character and
        # every place is tried for every field, without trying each pair (a third of the requests).
        for turn, bad in enumerate(CONTROL + SURROGATES):
            attacked = replaced(body, where, lambda value, bad=bad, turn=turn: placed(value, bad)[turn % 3])
            assert_refused(send(platform, op, owner, body=attacked), field)


@pytest.mark.parametrize("settings_overrides", UNLIMITED)
def test_a_field_name_with_a_control_character_or_surrogate_is_400(platform):
    def check(owner, op):
        _, _, body = example_request(op, owner.workspace_id, largest_body=True)
        for bad in CONTROL + LINE_BREAKS + SURROGATES:
            assert_refused(send(platform, op, owner, body={**body, f"x{bad}y": 1}), "field name")

    each_operation(platform, BODY_OPERATIONS, check)


@pytest.mark.parametrize("settings_overrides", UNLIMITED)
def test_a_body_nested_past_the_bound_is_400_before_anything_recursive_reads_it(platform):
    def check(owner, op):
        for raw in (b"[" * 10_000 + b"]" * 10_000, b'{"a":' * 5_000 + b"1" + b"}" * 5_000,
                    b"[" * 200_000 + b"]" * 200_000, b'{"a":' * 1_000 + b'"\\ud800"' + b"}" * 1_000):
            assert_refused(send(platform, op, owner, raw=raw), "nested too deeply", str(MAX_BODY_DEPTH))

    each_operation(platform, BODY_OPERATIONS, check)


# Every operation that takes a body, uploads included: each says what its body is.
ANY_BODY_OPERATIONS = [o for o in OPERATIONS if "requestBody" in o.spec]


def send_typed(platform, op: Operation, owner, content_type: str | None, body: bytes | None = None):
    """The operation's example request, its body as ``body`` (the example's own by default)
    with ``content_type`` as its Content-Type, or none at all."""
    default_path, default_query, default_body = example_request(op, owner.workspace_id, largest_body=True)
    content = encoded(op, default_body)[0] if body is None else body
    headers = {**owner.headers, **({"Content-Type": content_type} if content_type else {})}
    return platform.client.request(op.method.upper(), "/api/v2" + default_path, params=default_query,
                                   headers=headers, content=content)


def assert_unsupported(response, op: Operation) -> None:
    assert response.status_code == 415, response.text
    data = response.json()["data"]
    assert data["code"] == "unsupported_media_type", data
    for media in op.spec["requestBody"]["content"]:
        assert media in data["message"], data["message"]


@pytest.mark.parametrize("op", ANY_BODY_OPERATIONS, ids=[o.operation_id for o in ANY_BODY_OPERATIONS])
def test_a_body_without_a_content_type_or_of_another_type_is_415_naming_the_accepted_types(platform, op):
    owner = platform.workspace()
    for content_type in (None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
                         "application/merge-patch+json", "nonsense"):
        if content_type not in op.spec["requestBody"]["content"]:  # a document upload takes text/plain
            assert_unsupported(send_typed(platform, op, owner, content_type), op)
    # The same body said as what it is gets past the media type (to whatever its example meets).
    declared = encoded(op, example_request(op, owner.workspace_id, largest_body=True)[2])[1]["Content-Type"]
    response = send_typed(platform, op, owner, declared)
    assert response.status_code not in (415, 500), response.text


@pytest.mark.parametrize("op", ANY_BODY_OPERATIONS, ids=[o.operation_id for o in ANY_BODY_OPERATIONS])
def test_no_body_and_no_content_type_is_answered_as_an_empty_body_of_the_declared_type(platform, op):
    owner = platform.workspace()
    declared = encoded(op, example_request(op, owner.workspace_id, largest_body=True)[2])[1]["Content-Type"]
    untyped, typed = (send_typed(platform, op, owner, content_type, body=b"") for content_type in (None, declared))
    assert untyped.status_code == typed.status_code and untyped.status_code not in (415, 500), untyped.text
    assert untyped.json()["data"].get("code") == typed.json()["data"].get("code")


def nested(depth: int):
    """``depth`` containers, one inside the other, as a body's field value (the body adds one)."""
    value = []
    for _ in range(depth - 2):
        value = [value]
    return value


def test_the_nesting_bound_is_exact(platform):
    owner = platform.workspace()
    op = next(o for o in BODY_OPERATIONS if o.operation_id == "createApiKey")
    _, _, body = example_request(op, owner.workspace_id, largest_body=True)
    # At the bound the body is read and judged by its schema; one level more and it is not read.
    at_bound = assert_refused(send(platform, op, owner, body={**body, "permissions": nested(MAX_BODY_DEPTH)}),
                              "permissions.0")
    assert "nested" not in at_bound
    assert_refused(send(platform, op, owner, body={**body, "permissions": nested(MAX_BODY_DEPTH + 1)}),
                   "nested too deeply")


def test_a_line_break_ending_a_one_line_field_is_refused(platform):
    """Python's "$" matches before a final line break; the contract's patterns mean the end."""
    owner = platform.workspace()
    op = next(o for o in BODY_OPERATIONS if o.operation_id == "createApiKey")
    for bad in LINE_BREAKS:
        assert_refused(send(platform, op, owner, body={"name": "importer" + bad, "userId": owner.user_id}),
                       "name", "one line")
    assert send(platform, op, owner, body={"name": "importer", "userId": owner.user_id}).status_code == 200


def test_an_escaped_surrogate_pair_is_one_character_and_accepted(platform):
    owner = platform.workspace()
    r = platform.client.post("/api/v2/api-keys", params={"workspaceId": owner.workspace_id},
                             headers={**owner.headers, "Content-Type": "application/json"},
                             content=b'{"name": "rocket \\ud83d\\ude80", "userId": "' + owner.user_id.encode() + b'"}')
    assert r.status_code == 200, r.text
    assert r.json()["data"]["result"]["apiKey"]["name"] == "rocket \U0001F680"


# --- echoes: a message repeats a few dozen characters of a value, the log line likewise ------

def create(platform, owner, body):
    return platform.client.post("/api/v2/api-keys", params={"workspaceId": owner.workspace_id},
                                headers=owner.headers, json=body)


def test_a_huge_list_is_named_by_its_start_and_length(platform, caplog):
    owner = platform.workspace()
    with caplog.at_level(logging.INFO):
        r = create(platform, owner, {"name": "k", "userId": owner.user_id, "permissions": ["calls:read"] * 20_000})
    message = assert_refused(r, "permissions", "20000 items", "at most 200 items")
    assert len(r.content) < 500 and message.count("calls:read") <= 3
    logged = [record.getMessage() for record in caplog.records]
    assert any("20000 items" in line for line in logged)
    assert max(map(len, logged)) < 1000


def test_at_most_200_permissions_are_read_and_201_refused(platform):
    owner = platform.workspace()
    from models.identity.permissions import CATALOG
    listed = list(CATALOG)
    assert create(platform, owner, {"name": "k", "userId": owner.user_id,
                                    "permissions": (listed * 2)[:200]}).status_code == 200
    assert_refused(create(platform, owner, {"name": "k", "userId": owner.user_id, "permissions": (listed * 2)[:201]}),
                   "201 items", "at most 200")


@pytest.mark.parametrize("body", [
    {"name": "n" * 100_000},
    {"name": "k", "permissions": ["x" * 100_000]},
    {"name": "k", "expiresAt": "9" * 100_000},
    {"name": "k", "y" * 100_000: 1},
], ids=["long name", "long enum value", "long date", "long unknown field"])
def test_a_huge_value_is_not_echoed(platform, body):
    owner = platform.workspace()
    r = create(platform, owner, {"userId": owner.user_id, **body})
    assert_refused(r)
    assert len(r.content) < 500


def test_a_huge_parameter_is_not_echoed(platform):
    owner = platform.workspace()
    for params in ({"workspaceId": owner.workspace_id, "ids": "i" * 20_000},
                   {"workspaceId": owner.workspace_id, "ids": ",".join(["i"] * 5_000)},
                   {"workspaceId": owner.workspace_id, "ids": "a", "z" * 20_000: "1"}):
        r = platform.client.delete("/api/v2/api-keys", params=params, headers=owner.headers)
        assert_refused(r)
        assert len(r.content) < 500
    r = platform.client.get("/api/v2/api-keys", params={"workspaceId": owner.workspace_id, "limit": "9" * 5_000},
                            headers=owner.headers)
    assert_refused(r, "limit")
    assert len(r.content) < 500


def test_free_text_in_a_body_may_hold_tab_and_line_breaks_and_nothing_else():
    """No operation takes free text yet; the rule for the first one that does."""
    from api.validation import body_problem
    assert body_problem({"notes": ["line 1\r\n\tline 2"]}) is None
    assert body_problem({"notes": ["a\x0bb"]}) == \
        "Invalid value for notes.0: must not contain a control character (U+000B at position 1)."


def test_parameter_validators_are_built_once_per_parameter_whatever_the_values(platform):
    from api import validation
    owner = platform.workspace()
    url = f"/api/v2/api-keys?workspaceId={owner.workspace_id}"
    platform.client.get(f"{url}&limit=5&offset=0", headers=owner.headers)
    built = len(validation._parameter_validators)
    statuses = {platform.client.get(f"{url}&limit={limit}&offset={offset}", headers=owner.headers).status_code
                for limit, offset in [(1, 0), (100, 7), (0, 0), (101, 0), ("x", 0), (5, -1)] * 20}
    assert statuses == {200, 400}
    assert len(validation._parameter_validators) == built
    too_big = platform.client.get(f"{url}&limit=101", headers=owner.headers)
    assert too_big.status_code == 400 and "limit" in too_big.json()["data"]["message"]


def test_unknown_query_parameters_are_named_in_order_and_printable(platform):
    owner = platform.workspace()
    expected = "Extra query parameter(s) alpha,mid\\x01dle,zeta not in spec."
    for order in (["zeta", "mid\x01dle", "alpha"], ["alpha", "zeta", "mid\x01dle"]):
        r = platform.client.get("/api/v2/permissions", params={name: "1" for name in order}, headers=owner.headers)
        assert r.status_code == 400 and r.json()["data"]["message"] == expected, r.text
