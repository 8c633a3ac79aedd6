"""GET /metrics on the management API: Prometheus text, counted per operation and status, summed
over every worker process; and the access line that goes with each request."""
from __future__ import annotations

import json

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from models.identity.tables import ApiKey
from models.kernel.db import session
from tests.support import factories
from tests.support.servers import start_server, stop_server


def samples(text: str) -> dict:
    """{(sample name, sorted labels): value} of a scrape."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def requests_of(scrape: dict, operation: str, status: int) -> float:
    return scrape.get(("api_requests_total", (("operation", operation), ("status", str(status)))), 0.0)


def test_requests_are_counted_by_operation_and_status(platform):
    owner = platform.workspace()
    before = samples(platform.client.get("/metrics").text)
    for _ in range(3):
        assert platform.client.get("/api/v2/permissions", headers=owner.headers).status_code == 200
    assert platform.client.get("/api/v2/permissions").status_code == 401
    assert platform.client.get("/api/v2/no-such-path").status_code == 404
    response = platform.client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    after = samples(response.text)
    assert requests_of(after, "getPermissionCatalog", 200) - requests_of(before, "getPermissionCatalog", 200) == 3
    assert requests_of(after, "getPermissionCatalog", 401) - requests_of(before, "getPermissionCatalog", 401) == 1
    assert requests_of(after, "-", 404) - requests_of(before, "-", 404) == 1
    count = ("api_request_duration_seconds_count", (("operation", "getPermissionCatalog"),))
    assert after[count] - before.get(count, 0.0) == 4


@pytest.mark.parametrize("settings_overrides", [{"default_requests_per_minute": 2}])
def test_rate_limit_refusals_are_counted(platform):
    owner = platform.workspace()
    before = samples(platform.client.get("/metrics").text).get(("api_rate_limit_refusals_total", ()), 0.0)
    statuses = [platform.client.get("/api/v2/permissions", headers=owner.headers).status_code for _ in range(4)]
    # Two fit the minute's limit; a minute boundary in between would reset it, so allow for that.
    refused = statuses.count(429)
    assert statuses[:2] == [200, 200] and refused >= 1
    after = samples(platform.client.get("/metrics").text)[("api_rate_limit_refusals_total", ())]
    assert after - before == refused


def test_several_workers_are_summed_in_every_scrape(tmp_path):
    server = start_server(tmp_path, WORKERS="2", RATE_LIMITS_ENABLED="false", LOG_LEVEL="INFO", LOG_FORMAT="json")
    try:
        token = server.admin("bootstrap", "--workspace", "m", "--email", "m@example.com")["token"]
        # A new connection per request, so both workers answer some of them.
        for _ in range(40):
            with httpx.Client() as client:
                assert client.get(f"{server.url}/api/v2/permissions",
                                  headers={"Authorization": f"Bearer {token}"}).status_code == 200
        # Whichever worker answers the scrape, it reports all 40, and only the API's own metrics.
        for _ in range(6):
            with httpx.Client() as client:
                scrape = samples(client.get(f"{server.url}/metrics").text)
            assert requests_of(scrape, "getPermissionCatalog", 200) == 40
            assert {name.split("_")[0] for name, _ in scrape} == {"api"}
    finally:
        stop_server(server)
    log = next(tmp_path.glob("server-*.log")).read_text()
    access = [json.loads(line) for line in log.splitlines() if '"logger":"api.access"' in line]
    assert len([a for a in access if a["operation"] == "getPermissionCatalog"]) == 40
    assert {a["status"] for a in access if a["operation"] == "getPermissionCatalog"} == {200}
    assert all(a["credential_id"] and a["credential_id"] not in token for a in access
               if a["operation"] == "getPermissionCatalog")
    assert token not in log and token.split("_", 1)[1] not in log
    # Every line of the log is one JSON object: uvicorn's own too.
    assert all(json.loads(line) for line in log.splitlines() if line.strip())


def test_the_access_line_names_the_credential_by_id(platform, caplog):
    owner = platform.workspace()
    key = factories.api_key(owner)
    with caplog.at_level("INFO", logger="api.access"):
        platform.client.get("/api/v2/permissions", headers=key.headers)
    line = [r for r in caplog.records if r.name == "api.access"][-1]
    assert line.operation == "getPermissionCatalog" and line.status == 200
    with session():
        assert line.credential_id in {k.id for k in ApiKey.in_workspace(owner.workspace_id)}
    assert line.credential_id not in key.secret and key.secret not in line.getMessage()
