"""A Python client generated from the served contract with openapi-python-client creates, lists and
deletes API keys against a live server."""
from __future__ import annotations

import importlib
import subprocess
import sys
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

CONFIG = Path(__file__).with_name("openapi-python-client.yaml")
PERMISSIONS = ["calls:read", "calls:import", "api-keys:read"]


@pytest.fixture
def client_package(live_server, tmp_path):
    """The generated package, importable for the duration of one test."""
    # A fresh name per run, so no module of an earlier generation is found in sys.modules.
    name = f"generated_client_{uuid.uuid4().hex[:8]}"
    run = subprocess.run(
        [str(Path(sys.executable).with_name("openapi-python-client")), "generate",
         "--url", f"{live_server.url}/api/v2/openapi.json", "--output-path", str(tmp_path / name),
         "--meta", "none", "--config", str(CONFIG), "--fail-on-warning"],
        capture_output=True, text=True, timeout=300,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert "warning" not in output.lower(), output
    sys.path.insert(0, str(tmp_path))
    try:
        yield lambda module: importlib.import_module(f"{name}.{module}")
    finally:
        sys.path.remove(str(tmp_path))
        for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[module]


def test_generated_client_creates_lists_and_deletes_api_keys(live_server, client_package):
    owner = live_server.admin("bootstrap", "--workspace", "w", "--email", "a@example.com")
    workspace = owner["workspaceId"]
    client_module, models = client_package("client"), client_package("models")
    create = client_package("api.api_keys.create_api_key")
    list_keys = client_package("api.api_keys.list_api_keys")
    delete = client_package("api.api_keys.delete_api_keys")
    base_url = f"{live_server.url}/api/v2"
    as_owner = client_module.AuthenticatedClient(base_url=base_url, token=owner["token"],
                                                 raise_on_unexpected_status=True)

    body = models.CreateApiKeyBody(
        name="importer", user_id=owner["userId"],
        rate_limit=models.CreateApiKeyBodyRateLimit(requests_per_minute=60, requests_per_day=10_000),
        permissions=[models.CreateApiKeyBodyPermissionsItem(p) for p in PERMISSIONS],
    )
    created = create.sync_detailed(client=as_owner, body=body, workspace_id=workspace)
    assert created.status_code == 200, created.content
    result = created.parsed.data.result
    key, secret = result.api_key, result.key
    assert created.parsed.success is True
    assert secret.startswith("vak_") and key.key == secret
    assert key.workspace_id == workspace and key.user_id == owner["userId"] and key.name == "importer"
    assert key.is_active is True
    assert sorted(p.value for p in key.permissions) == sorted(PERMISSIONS)
    assert (key.rate_limit.requests_per_minute, key.rate_limit.requests_per_day) == (60, 10_000)
    expected_expiry = datetime.now(timezone.utc) + timedelta(days=90)
    assert abs((key.expires_at - expected_expiry).total_seconds()) < 300, key.expires_at
    assert abs((key.created_at - datetime.now(timezone.utc)).total_seconds()) < 300, key.created_at

    listed = list_keys.sync_detailed(client=as_owner, workspace_id=workspace, limit=100)
    assert listed.status_code == 200, listed.content
    assert [k.id for k in listed.parsed.data.result.api_keys] == [key.id]
    assert listed.parsed.data.result.pagination.total == 1
    listed_key = listed.parsed.data.result.api_keys[0]
    assert "key" not in listed_key.additional_properties
    assert secret not in listed.content.decode()
    assert sorted(p.value for p in listed_key.permissions) == sorted(PERMISSIONS)

    as_key = client_module.AuthenticatedClient(base_url=base_url, token=secret)
    assert list_keys.sync_detailed(client=as_key, workspace_id=workspace).status_code == 200

    deleted = delete.sync_detailed(client=as_owner, workspace_id=workspace, ids=[key.id])
    assert deleted.status_code == 200, deleted.content
    assert deleted.parsed.data.result.success is True and deleted.parsed.data.result.deleted_count == 1

    refused = list_keys.sync_detailed(client=as_key, workspace_id=workspace)
    assert refused.status_code == 401, refused.content
    assert refused.parsed.success is False and refused.parsed.data.message
    after = list_keys.sync_detailed(client=as_owner, workspace_id=workspace)
    assert after.parsed.data.result.api_keys == [] and after.parsed.data.result.pagination.total == 0
