"""Every kind of response, the framework's own errors included, comes in the envelope with a request
id; every error with the machine-readable code of its kind."""
from __future__ import annotations

import logging
import uuid

import pytest

from api.envelope import STATUS_CODES

API = "/api/v2/api-keys"


def assert_error(response, status: int, *words: str, code: str | None = None):
    """The error envelope, whose ``data.code`` is ``code``, by default the status's."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["success"] is False and set(body) == {"success", "data"}
    assert isinstance(body["data"]["message"], str) and body["data"]["message"]
    assert set(body["data"]) == {"message", "code", "result"}
    assert body["data"]["code"] == (code or STATUS_CODES[status]), body
    for word in words:
        assert word in body["data"]["message"], body["data"]["message"]
    assert response.headers["x-request-id"]
    return body["data"]["message"]


def test_success_envelope(platform):
    owner = platform.workspace()
    r = platform.client.get("/api/v2/permissions", headers=owner.headers)
    body = r.json()
    assert body["success"] is True and body["data"]["message"] and body["data"]["result"]["permissions"]
    assert r.headers["x-request-id"]


def test_400_body_names_field_and_rule(platform):
    owner = platform.workspace()
    r = platform.client.post(API, params={"workspaceId": owner.workspace_id}, headers=owner.headers,
                             json={"name": "k", "userId": owner.user_id, "rateLimit": {"requestsPerMinute": 0, "requestsPerDay": 1}})
    assert_error(r, 400, "rateLimit.requestsPerMinute", "minimum")


def test_400_query_names_parameter_and_rule(platform):
    owner = platform.workspace()
    r = platform.client.get(API, params={"workspaceId": owner.workspace_id, "limit": 500}, headers=owner.headers)
    assert_error(r, 400, "limit", "maximum")


def test_400_unknown_query_parameter(platform):
    owner = platform.workspace()
    r = platform.client.get(API, params={"workspaceId": owner.workspace_id, "limt": 5}, headers=owner.headers)
    assert_error(r, 400, "limt")


def test_400_malformed_json(platform):
    owner = platform.workspace()
    r = platform.client.post(API, params={"workspaceId": owner.workspace_id}, content=b'{"name": ',
                             headers={**owner.headers, "content-type": "application/json"})
    assert_error(r, 400, "JSON")


def test_400_body_not_an_object(platform):
    owner = platform.workspace()
    r = platform.client.post(API, params={"workspaceId": owner.workspace_id}, headers=owner.headers, json=["name"])
    assert_error(r, 400, "object")


def test_401(platform):
    assert_error(platform.client.get("/api/v2/permissions"), 401, "Bearer")


def test_403(platform):
    owner = platform.workspace()
    viewer = platform.member(owner, "viewer")
    r = platform.client.delete(API, params={"workspaceId": owner.workspace_id, "ids": "x"}, headers=viewer.headers)
    assert_error(r, 403, "api-keys:delete")


def test_404_unknown_resource(platform):
    owner = platform.workspace()
    unknown = str(uuid.uuid4())
    r = platform.client.get(f"{API}/{unknown}", params={"workspaceId": owner.workspace_id}, headers=owner.headers)
    assert_error(r, 404, unknown, code="not_found")


def test_409_conflict(platform):
    owner = platform.workspace()
    params = {"workspaceId": owner.workspace_id}
    body = {"name": "score", "type": "number"}
    assert platform.client.post("/api/v2/insights", params=params, headers=owner.headers, json=body).status_code == 200
    r = platform.client.post("/api/v2/insights", params=params, headers=owner.headers, json=body)
    assert_error(r, 409, "score", code="conflict")


def test_every_domain_error_answers_its_own_code():
    """Each kind the domain raises (models.kernel.errors and the kinds defined beside their use) keeps
    its code through the envelope, whatever its status."""
    import orjson

    from api.envelope import domain_error
    from handlers.calls.call_recordings import RangeOutside
    from models.billing.credits import PaymentRequired
    from models.identity.invitations import Gone
    from models.kernel.errors import (
        Conflict,
        Forbidden,
        InvalidInput,
        NotFound,
        RateLimited,
        Unauthenticated,
        Unavailable,
        UnsupportedMediaType,
        WorkspaceMismatch,
    )

    class Request:  # what domain_error reads of a request (only to log a 5xx)
        method, url = "GET", type("URL", (), {"path": "/api/v2/x"})()

    expected = {InvalidInput: (400, "validation_failed"), WorkspaceMismatch: (400, "workspace_mismatch"),
                Unauthenticated: (401, "unauthenticated"), PaymentRequired: (402, "insufficient_credits"),
                Forbidden: (403, "forbidden"), NotFound: (404, "not_found"), Conflict: (409, "conflict"),
                Gone: (410, "gone"), UnsupportedMediaType: (415, "unsupported_media_type"),
                RangeOutside: (416, "range_not_satisfiable"), RateLimited: (429, "rate_limited")}
    for kind, (status, code) in expected.items():
        response = domain_error(Request(), kind("Why."))
        assert response.status_code == status
        assert orjson.loads(response.body)["data"] == {"message": "Why.", "code": code, "result": None}
    response = domain_error(Request(), Unavailable("Retry.", retry_after_s=5))
    assert response.status_code == 503 and orjson.loads(response.body)["data"]["code"] == "unavailable"


def test_404_unknown_path(platform):
    owner = platform.workspace()
    assert_error(platform.client.get("/api/v2/no-such-thing", headers=owner.headers), 404, "/api/v2/no-such-thing")
    assert_error(platform.client.get("/elsewhere"), 404)


def test_405_wrong_method(platform):
    owner = platform.workspace()
    assert_error(platform.client.put(API, headers=owner.headers), 405, "PUT")


def test_413_declared_length(platform):
    owner = platform.workspace()
    body = b'{"name": "' + b"x" * (1024 * 1024) + b'"}'
    r = platform.client.post(API, params={"workspaceId": owner.workspace_id}, content=body,
                             headers={**owner.headers, "content-type": "application/json"})
    assert_error(r, 413, "1048576")


@pytest.mark.parametrize("settings_overrides", [{"max_body_bytes": 100}])
def test_413_streamed_body_is_cut_while_reading(platform):
    owner = platform.workspace()

    def chunks():
        yield b'{"name": "'
        for _ in range(10):
            yield b"x" * 50
        yield b'"}'

    r = platform.client.post(API, params={"workspaceId": owner.workspace_id}, content=chunks(),
                             headers={**owner.headers, "content-type": "application/json"})
    assert "content-length" not in {k.lower() for k in r.request.headers}
    assert_error(r, 413, "100 bytes")
    # At the limit itself the body is read and validated.
    exact = b'{"name": "' + b"x" * (100 - 26 - len(owner.user_id)) + b'", "userId": "' + owner.user_id.encode() + b'"}'
    assert len(exact) == 100
    r = platform.client.post(API, params={"workspaceId": owner.workspace_id}, content=exact,
                             headers={**owner.headers, "content-type": "application/json"})
    assert r.status_code == 200, r.text


def test_415(platform):
    owner = platform.workspace()
    r = platform.client.post(API, params={"workspaceId": owner.workspace_id}, content=b"name=k",
                             headers={**owner.headers, "content-type": "application/x-www-form-urlencoded"})
    assert_error(r, 415, "application/json")


@pytest.mark.parametrize("content_type, status", [
    ("application/json; charset=klingon", 415), ("application/json;charset=latin-1", 415),
    ('application/json; charset="iso-8859-1"', 415), ("application/json; charset=UTF-8", 200),
    ('application/json;charset="utf-8"', 200), ("application/json; CHARSET=utf8", 200)])
def test_a_json_body_is_utf_8_and_another_charset_is_415_naming_it(platform, content_type, status):
    owner = platform.workspace()
    body = b'{"name": "k", "userId": "' + owner.user_id.encode() + b'"}'
    r = platform.client.post(API, params={"workspaceId": owner.workspace_id}, content=body,
                             headers={**owner.headers, "content-type": content_type})
    if status == 415:
        charset = content_type.rpartition("=")[2].strip('"')
        assert_error(r, 415, f"'{charset}'", "UTF-8")
    else:
        assert r.status_code == 200, r.text


@pytest.mark.parametrize("settings_overrides", [{"default_requests_per_minute": 1}])
def test_429(platform):
    owner = platform.workspace()
    assert platform.client.get("/api/v2/permissions", headers=owner.headers).status_code == 200
    r = platform.client.get("/api/v2/permissions", headers=owner.headers)
    assert_error(r, 429, "Rate limit", code="rate_limited")
    assert int(r.headers["retry-after"]) >= 1


def test_500_hides_the_cause_and_logs_it_with_the_request_id(platform, monkeypatch, caplog):
    import models.identity.api_keys

    def broken(*args, **kwargs):
        raise RuntimeError("SELECT secret FROM api_key -- vak_leaked")

    monkeypatch.setattr(models.identity.api_keys, "list_api_keys", broken)
    owner = platform.workspace()
    with caplog.at_level(logging.ERROR):
        r = platform.client.get(API, params={"workspaceId": owner.workspace_id}, headers=owner.headers)
    message = assert_error(r, 500)
    rid = r.headers["x-request-id"]
    assert rid in message
    for leak in ("SELECT", "vak_leaked", "Traceback", "RuntimeError"):
        assert leak not in r.text
    logged = [rec for rec in caplog.records if rid in rec.getMessage()]
    assert logged and logged[0].exc_info and "vak_leaked" in str(logged[0].exc_info[1])


def test_request_id_is_taken_from_the_caller_when_safe(platform):
    r = platform.client.get("/api/v2/permissions", headers={"X-Request-ID": "trace-abc.123"})
    assert r.headers["x-request-id"] == "trace-abc.123"
    r = platform.client.get("/api/v2/permissions", headers={"X-Request-ID": "bad id\twith spaces"})
    assert r.headers["x-request-id"] != "bad id\twith spaces" and len(r.headers["x-request-id"]) == 32


def test_access_log_line_never_holds_a_secret(platform, caplog):
    owner = platform.workspace()
    with caplog.at_level(logging.INFO, logger="api.access"):
        platform.client.get(API, params={"workspaceId": owner.workspace_id, "token": owner.secret}, headers=owner.headers)
    lines = [rec.getMessage() for rec in caplog.records if rec.name == "api.access"]
    assert lines and all(owner.secret not in line for line in lines)
    # method, path, then the status and the request id among the fields that follow
    fields = lines[-1].split(" ")
    assert fields[:2] == ["GET", API] and "400" in fields[2:] and any(f.endswith("ms") for f in fields)


def test_spec_and_docs_are_served(platform):
    spec = platform.client.get("/api/v2/openapi.json")
    assert spec.status_code == 200 and spec.json()["info"]["version"] == "2.0.0"
    ui = platform.client.get("/api/v2/ui/")
    assert ui.status_code == 200 and "swagger" in ui.text.lower()


# --- hostile input: tests/api/test_hostile_input.py attacks every operation of the contract ---

def test_a_huge_query_value_is_400_not_a_server_error(platform):
    owner = platform.workspace()
    r = platform.client.get("/api/v2/api-keys/" + "x" * 5000, params={"workspaceId": owner.workspace_id},
                            headers=owner.headers)
    assert r.status_code == 400 and "apiKeyId" in r.json()["data"]["message"]


def test_a_fixed_segment_under_a_parameter_is_405_for_a_method_it_lacks_not_an_id():
    from api.contract import operations
    from api.static_paths import StaticPathMethods
    # /campaign/{campaignId}/contacts/import (POST) beside /campaign/{campaignId}/contacts/{contactId}
    # (GET, DELETE): a GET of .../import is no contact named "import".
    guard = StaticPathMethods(None, operations(), "/api/v2")
    allowed = dict((pattern.pattern, verbs) for pattern, verbs in guard.allowed)
    matched = [verbs for pattern, verbs in guard.allowed
               if pattern.fullmatch("/api/v2/campaign/9f0a1b2c-3d4e-4f5a-8b6c-7d8e9f0a1b2c/contacts/import")]
    assert matched == [["POST"]], allowed
    assert any(pattern.fullmatch("/api/v2/call/export") for pattern, _ in guard.allowed)
    # A path of ids alone is no fixed path: an id is never taken for one.
    assert not any(pattern.fullmatch("/api/v2/campaign/9f0a1b2c-3d4e-4f5a-8b6c-7d8e9f0a1b2c/contacts/"
                                     "0a1b2c3d-4e5f-4a6b-9c7d-8e9f0a1b2c3d") for pattern, _ in guard.allowed)


def test_get_of_a_campaign_contacts_import_is_405_naming_post(platform):
    owner = platform.workspace()
    r = platform.client.get("/api/v2/campaign/9f0a1b2c-3d4e-4f5a-8b6c-7d8e9f0a1b2c/contacts/import",
                            params={"workspaceId": owner.workspace_id}, headers=owner.headers)
    assert r.status_code == 405 and r.headers["allow"] == "POST"
    assert_error(r, 405, "GET")
