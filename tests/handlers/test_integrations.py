"""Integrations over HTTP: created, read, listed (by kind), changed, rotated and deleted; the secret
never in an answer (any field), a log line or the audit log, only its hint; each kind's required
fields; URLs under the outbound address rules; another workspace's integrations (404); and a
workspace's llm integration taking the place of the platform's endpoint for a chat session."""
from __future__ import annotations

import json
import logging
import socket
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from models.kernel.db import session
from tests.support import factories
from tests.support.client import Api, owner

SECRET = "sk-live-very-secret-c0de"
NEW_SECRET = "sk-live-rotated-9f3a"
FIELDS = {"id", "workspaceId", "kind", "name", "baseUrl", "model", "provider", "account", "secretHint", "createdBy",
          "createdAt", "updatedAt", "rotatedAt"}


@pytest.fixture
def settings_overrides(request):
    # The default settings, unless a test gives its own (parametrized indirectly).
    return getattr(request, "param", {})


def create(api: Api, expect: int = 200, **body) -> dict:
    body.setdefault("kind", "crm")
    body.setdefault("name", "Our CRM")
    body.setdefault("secret", SECRET)
    return api("POST", "/integrations", expect, json=body)


def audit_log(workspace_id: str) -> str:
    from models.audit.tables import AuditEntry
    with session():
        return json.dumps(list(AuditEntry.select().where(AuditEntry.workspace == workspace_id).dicts()), default=str)


def test_an_integration_is_created_read_listed_changed_rotated_and_deleted_without_its_secret(platform, caplog):
    api = owner(platform)
    with caplog.at_level(logging.DEBUG):
        created = create(api, kind="telephony", name="Twilio main", provider="twilio", account="AC123")
        assert created["secretStored"] is True
        made = created["integration"]
        assert set(made) == FIELDS
        assert {k: made[k] for k in FIELDS - {"id", "createdAt", "updatedAt"}} == {
            "workspaceId": api.actor.workspace_id, "kind": "telephony", "name": "Twilio main", "baseUrl": None,
            "model": None, "provider": "twilio", "account": "AC123", "secretHint": "…c0de",
            "createdBy": api.actor.user_id, "rotatedAt": None}
        assert api("GET", f"/integrations/{made['id']}")["integration"] == made
        assert api("GET", "/integrations") == {"integrations": [made],
                                               "pagination": {"total": 1, "limit": 20, "offset": 0}}
        changed = api("PATCH", f"/integrations/{made['id']}", json={"name": "Twilio", "account": None})["integration"]
        assert (changed["name"], changed["account"], changed["secretHint"]) == ("Twilio", None, "…c0de")
        rotated = api("POST", f"/integrations/{made['id']}/rotate", json={"secret": NEW_SECRET})["integration"]
        assert rotated["secretHint"] == "…9f3a" and rotated["rotatedAt"] is not None
        assert api("DELETE", f"/integrations/{made['id']}") == {"id": made["id"], "deleted": True}
        api("GET", f"/integrations/{made['id']}", 404)
        api("POST", f"/integrations/{made['id']}/rotate", 404, json={"secret": NEW_SECRET})
    for secret in (SECRET, NEW_SECRET):
        assert secret not in caplog.text
        assert secret not in audit_log(api.actor.workspace_id)
    assert "createIntegration" in audit_log(api.actor.workspace_id)


def test_the_secret_is_stored_encrypted_and_rotation_replaces_it(platform):
    from models.integrations import integrations
    from models.integrations.tables import Integration
    api = owner(platform)
    made = create(api)["integration"]
    with session():
        stored = Integration.get_by_id(made["id"]).secret
        assert SECRET not in stored
        assert integrations.secret_of(workspace_id=api.actor.workspace_id, integration_id=made["id"]) == SECRET
    api("POST", f"/integrations/{made['id']}/rotate", json={"secret": NEW_SECRET})
    with session():
        assert integrations.secret_of(workspace_id=api.actor.workspace_id, integration_id=made["id"]) == NEW_SECRET


@pytest.mark.parametrize("body, message", [
    ({"kind": "llm"}, "A llm integration needs baseUrl."),
    ({"kind": "llm", "baseUrl": "https://llm.example.com/v1"}, "A llm integration needs model."),
    ({"kind": "runtime"}, "A runtime integration needs baseUrl."),
    ({"kind": "telephony"}, "A telephony integration needs provider."),
    ({"kind": "crm", "name": "   "}, "name must be 1 to 100 characters once trimmed; 0 given."),
    ({"kind": "crm", "secret": "1234567"}, None),
    ({"kind": "crm", "secret": "x" * 4097}, None),
    ({"kind": "runtime", "baseUrl": "http://runtime.example.com"}, "baseUrl must be an https URL"),
    ({"kind": "runtime", "baseUrl": "https://127.0.0.1:8080"}, "baseUrl: "),
    ({"kind": "runtime", "baseUrl": "https://169.254.169.254/latest"}, "baseUrl: "),
    ({"kind": "runtime", "baseUrl": "https://user:pw@runtime.example.com"}, "baseUrl must not hold a user name"),
])
def test_each_kind_needs_its_fields_and_urls_pass_the_address_rules(platform, body, message):
    api = owner(platform)
    error = create(api, 400, **body)
    if message:
        assert error["message"].startswith(message), error
    assert api("GET", "/integrations")["integrations"] == []


def test_the_secret_at_its_bounds_and_the_hint(platform):
    api = owner(platform)
    assert create(api, secret="12345678")["integration"]["secretHint"] == "…5678"
    assert create(api, secret="y" * 4096)["integration"]["secretHint"] == "…yyyy"
    assert create(api, secret="Basic a2V5 ~!")["integration"]["secretHint"] == "…5 ~!"


@pytest.mark.parametrize("secret", ["1234567", "y" * 4097, "clé-secrète-0000", "sk-\u00a0nbsp-0000", "sk-0000\t0000"])
def test_a_secret_is_8_to_4096_printable_ascii_characters_as_a_header_carries(platform, secret):
    api = owner(platform)
    made = create(api, kind="crm", secret="first-secret-0000")["integration"]
    assert api("POST", "/integrations", 400, json={"kind": "crm", "name": "CRM 2", "secret": secret})["code"] == \
        "validation_failed"
    # Rotation holds to the same rule, and the secret stays the one stored.
    api("POST", f"/integrations/{made['id']}/rotate", 400, json={"secret": secret})
    assert api("GET", f"/integrations/{made['id']}")["integration"]["secretHint"] == "…0000"


def test_a_secret_outside_the_schema_is_refused_by_the_domain_naming_the_rule(platform):
    from models.integrations import integrations
    from models.kernel.errors import InvalidInput
    with pytest.raises(InvalidInput, match="^secret must be one line of printable ASCII characters"):
        integrations._secret("clé-secrète-0000")


def test_an_update_keeps_what_its_kind_requires(platform):
    api = owner(platform)
    made = create(api, kind="llm", name="vLLM", baseUrl="https://llm.example.com/v1/", model="m1")["integration"]
    assert made["baseUrl"] == "https://llm.example.com/v1"
    error = api("PATCH", f"/integrations/{made['id']}", 400, json={"model": None})
    assert error["message"] == "A llm integration needs model."
    api("PATCH", f"/integrations/{made['id']}", 400, json={"baseUrl": "https://10.0.0.5/v1"})
    api("PATCH", f"/integrations/{made['id']}", 400, json={})
    assert api("GET", f"/integrations/{made['id']}")["integration"] == made


def test_the_list_filters_by_kind_and_pages(platform):
    api = owner(platform)
    crm = [create(api, name=f"CRM {i}")["integration"]["id"] for i in range(3)]
    llm = create(api, kind="llm", name="vLLM", baseUrl="https://llm.example.com/v1", model="m")["integration"]["id"]
    assert [i["id"] for i in api("GET", "/integrations", limit=2)["integrations"]] == crm[:2]
    page = api("GET", "/integrations", kind="crm", offset=2)
    assert [i["id"] for i in page["integrations"]] == crm[2:] and page["pagination"]["total"] == 3
    assert [i["id"] for i in api("GET", "/integrations", kind="llm")["integrations"]] == [llm]
    api("GET", "/integrations", 400, kind="email")


def test_another_workspaces_integration_is_not_found(platform):
    api, other = owner(platform), platform.workspace()
    theirs = factories.integration(other)
    for method, path, body in (("GET", "", None), ("PATCH", "", {"name": "Mine"}), ("DELETE", "", None),
                               ("POST", "/rotate", {"secret": NEW_SECRET})):
        assert api(method, f"/integrations/{theirs}{path}", 404, json=body)["message"] == (
            f"No integration {theirs} in this workspace.")
    with session():
        from models.integrations import integrations
        assert integrations.secret_of(workspace_id=other.workspace_id, integration_id=theirs) == "factory-secret-0000"


# --- a workspace's own language model endpoint -------------------------------------------------

LOCAL = {"webhook_allow_http": True, "webhook_allow_private_addresses": True}


@pytest.mark.parametrize("settings_overrides", [
    LOCAL, LOCAL | {"llm_base_url": "http://127.0.0.1:9/v1", "llm_api_key": "sk-platform", "llm_model": "platform"},
], ids=["no-platform-endpoint", "platform-endpoint-elsewhere"], indirect=True)
def test_a_chat_session_asks_the_workspaces_llm_integration(platform, llm, settings_overrides, caplog):
    from models.integrations import llm as workspace_llm
    api = owner(platform)
    agent = factories.agent(api.actor, "Booker", config={"prompt": "You book tables.", "firstMessage": "Hello!"})
    session_id = api("POST", f"/chat/agent/{agent}/sessions")["session"]["id"]
    if "llm_base_url" not in settings_overrides:
        api("POST", f"/chat/agent/{agent}/sessions/{session_id}/messages", 503, json={"text": "A table?"})
    made = create(api, kind="llm", name="Ours", baseUrl=llm.base_url, model="workspace-model",
                  secret=SECRET)["integration"]
    llm.answer("For how many?")
    with caplog.at_level(logging.DEBUG):
        reply = api("POST", f"/chat/agent/{agent}/sessions/{session_id}/messages", json={"text": "A table?"})
    assert [m["text"] for m in reply["messages"]] == ["A table?", "For how many?"]
    asked = llm.requests[-1]
    assert asked["authorization"] == f"Bearer {SECRET}"
    assert SECRET not in caplog.text
    with session():
        models = workspace_llm.models_for(api.actor.workspace_id)
    platform_models = [("platform", "platform", None)] if "llm_model" in settings_overrides else []
    assert [tuple(m) for m in models] == platform_models + [("workspace-model", "integration", made["id"])]
    # Another workspace still has only the platform's endpoint.
    with session():
        other = workspace_llm.endpoint_for(platform.workspace().workspace_id)
    assert (other.base_url if other else None) == settings_overrides.get("llm_base_url")


@pytest.mark.parametrize("settings_overrides", [LOCAL], ids=["local"], indirect=True)
def test_a_workspaces_llm_endpoint_is_asked_only_where_the_address_rules_allow_when_asked(platform, llm,
                                                                                          monkeypatch):
    from models.webhooks import addresses
    api = owner(platform)
    agent = factories.agent(api.actor, "Booker", config={"prompt": "You book tables.", "firstMessage": "Hello!"})
    session_id = api("POST", f"/chat/agent/{agent}/sessions")["session"]["id"]
    create(api, kind="llm", name="Ours", baseUrl=llm.base_url, model="workspace-model")
    asked = len(llm.requests)
    # Saved while private addresses were allowed; they are not any more: the name is not connected to.
    monkeypatch.setattr(addresses, "_policy", addresses.Policy(allow_http=True, allow_private=False))
    failed = api("POST", f"/chat/agent/{agent}/sessions/{session_id}/messages", 502, json={"text": "A table?"})
    assert failed["code"] == "upstream_failed" and "could not be reached" in failed["message"]
    assert len(llm.requests) == asked


# --- testing a connection against a local server ------------------------------------------------

@contextmanager
def remote(status_by_path: dict[str, int]):
    """A local server that stands in for the third party: each path answers its status (404 else),
    and each request's path and Authorization header is kept."""
    seen: list[tuple[str, str | None]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            seen.append((self.path, self.headers.get("Authorization")))
            body = json.dumps({"echo": self.headers.get("Authorization")}).encode()
            self.send_response(status_by_path.get(self.path, 404))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def probe(api: Api, integration_id: str, expect: int = 200) -> dict:
    return api("POST", f"/integrations/{integration_id}/test", expect)


@pytest.mark.parametrize("settings_overrides", [LOCAL], ids=["local"], indirect=True)
def test_a_connection_test_asks_the_endpoint_with_the_secret_and_answers_without_it(platform, caplog):
    api = owner(platform)
    with remote({"/v1/models": 200, "/crm": 401}) as (base, seen), caplog.at_level(logging.DEBUG):
        llm = create(api, kind="llm", name="vLLM", baseUrl=f"{base}/v1", model="m")["integration"]["id"]
        crm = create(api, kind="crm", name="CRM", baseUrl=f"{base}/crm")["integration"]["id"]
        good, refused = probe(api, llm), probe(api, crm)
    assert (good["ok"], good["status"], good["reason"]) == (True, 200, None) and good["latencyMs"] >= 0
    assert (refused["ok"], refused["status"], refused["reason"]) == (False, 401, "The receiver answered 401.")
    assert seen == [("/v1/models", f"Bearer {SECRET}"), ("/crm", f"Bearer {SECRET}")]
    assert SECRET not in json.dumps([good, refused]) and SECRET not in caplog.text
    assert SECRET not in audit_log(api.actor.workspace_id)
    telephony = create(api, kind="telephony", name="Twilio", provider="twilio")["integration"]["id"]
    nothing = "This telephony integration has no baseUrl: there is no connection to test."
    assert probe(api, telephony) == {"ok": False, "status": None, "latencyMs": 0, "reason": nothing}


@pytest.mark.parametrize("settings_overrides", [LOCAL], ids=["local"], indirect=True)
def test_a_connection_test_is_refused_a_private_address_and_bounded_in_time(platform, monkeypatch):
    from handlers.integrations import integrations as handler
    from models.webhooks import addresses
    api = owner(platform)
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)  # connections are taken in, and never answered
    try:
        made = create(api, kind="runtime", name="Slow", baseUrl=f"http://127.0.0.1:{silent.getsockname()[1]}")
        monkeypatch.setattr(handler, "TEST_TIMEOUT_S", 0.5)
        started = time.monotonic()
        slow = probe(api, made["integration"]["id"])
        assert time.monotonic() - started < 3
        assert (slow["ok"], slow["status"], slow["reason"]) == (False, None, "No complete answer within 0.5 s.")
        # The address rules hold at connection time too: a private address is not asked.
        monkeypatch.setattr(addresses, "_policy", addresses.Policy(allow_http=True, allow_private=False))
        private = probe(api, made["integration"]["id"])
        assert private["ok"] is False and private["status"] is None and private["reason"].startswith("Not sent: ")
    finally:
        silent.close()
