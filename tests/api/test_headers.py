"""Response headers: no cache keeps a secured operation's answer, and cross-origin access is off
unless CORS_ORIGINS names the origin."""
from __future__ import annotations

import pytest

from api.contract import operations

OPERATIONS = operations()
PAGE = "https://app.example.com"


def call(platform, op, headers):
    path = "/api/v2" + op.path.replace("{apiKeyId}", "0b8e6a52")
    body = {"name": "k", "userId": "u"} if "requestBody" in op.spec else None
    return platform.client.request(op.method.upper(), path, params={"workspaceId": "w", "ids": "x"},
                                   headers=headers, json=body)


def test_the_answer_carrying_a_new_secret_is_not_stored(platform):
    owner = platform.workspace()
    r = platform.client.post("/api/v2/api-keys", params={"workspaceId": owner.workspace_id}, headers=owner.headers,
                             json={"name": "k", "userId": owner.user_id})
    assert r.status_code == 200 and r.json()["data"]["result"]["key"]
    assert r.headers["cache-control"] == "no-store"


@pytest.mark.parametrize("op", OPERATIONS, ids=[o.operation_id for o in OPERATIONS])
def test_every_answer_of_an_operation_is_not_stored_errors_included(platform, op):
    owner = platform.workspace()
    for headers in (owner.headers, {"Authorization": "Bearer vak_unknown"}, {}):
        r = call(platform, op, headers)
        assert r.headers.get("cache-control") == "no-store", (r.status_code, dict(r.headers))


def test_the_public_contract_and_docs_may_be_cached(platform):
    for path in ("/api/v2/openapi.json", "/api/v2/ui/"):
        assert "no-store" not in platform.client.get(path).headers.get("cache-control", "")


# --- CORS ------------------------------------------------------------------------------------

def preflight(platform, origin=PAGE, method="POST", headers="authorization, content-type"):
    return platform.client.options("/api/v2/api-keys", headers={
        "Origin": origin, "Access-Control-Request-Method": method, "Access-Control-Request-Headers": headers})


def test_without_cors_origins_there_is_no_cross_origin_access(platform):
    r = preflight(platform)
    assert r.status_code == 405 and not [h for h in r.headers if h.startswith("access-control-")]
    owner = platform.workspace()
    r = platform.client.get("/api/v2/permissions", headers={**owner.headers, "Origin": PAGE})
    assert r.status_code == 200 and not [h for h in r.headers if h.startswith("access-control-")]


@pytest.mark.parametrize("settings_overrides", [{"cors_origins": f" {PAGE} , https://admin.example.com"}])
def test_a_configured_origin_gets_preflights_and_readable_answers(platform):
    r = preflight(platform)
    assert r.status_code == 200, r.text
    assert r.headers["access-control-allow-origin"] == PAGE
    assert {"GET", "POST", "PATCH", "DELETE"} <= set(r.headers["access-control-allow-methods"].split(", "))
    allowed_headers = r.headers["access-control-allow-headers"].lower()
    assert "authorization" in allowed_headers and "content-type" in allowed_headers
    assert "access-control-allow-credentials" not in r.headers  # bearer tokens, never cookies
    assert r.json()["success"] is True and r.headers["x-request-id"]

    owner = platform.workspace()
    for headers in (owner.headers, {"Authorization": "Bearer vak_unknown"}):
        answer = platform.client.get("/api/v2/permissions", headers={**headers, "Origin": PAGE})
        assert answer.headers["access-control-allow-origin"] == PAGE
        exposed = answer.headers["access-control-expose-headers"].lower()
        assert "x-request-id" in exposed and "ratelimit-remaining" in exposed and "retry-after" in exposed


@pytest.mark.parametrize("settings_overrides", [{"cors_origins": PAGE}])
def test_another_origin_or_method_gets_a_refusal_in_the_envelope(platform):
    other_origin = preflight(platform, origin="https://evil.example")
    assert "access-control-allow-origin" not in other_origin.headers
    # A method none of the contract's operations takes.
    for r in (other_origin, preflight(platform, method="TRACE")):
        assert r.status_code == 400 and r.json()["success"] is False and "Disallowed" in r.json()["data"]["message"]
    owner = platform.workspace()
    r = platform.client.get("/api/v2/permissions", headers={**owner.headers, "Origin": "https://evil.example"})
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers
