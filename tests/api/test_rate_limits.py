"""Rate limits over HTTP: a key's own limit, the platform default, switching it off, several workers."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.support.servers import start_server, stop_server

CATALOG = "/api/v2/permissions"


def test_a_keys_own_limit_is_enforced_with_headers(platform):
    owner = platform.workspace()
    key = platform.key_actor(owner, rateLimit={"requestsPerMinute": 3, "requestsPerDay": 100})
    responses = [platform.client.get(CATALOG, headers=key.headers) for _ in range(4)]
    assert [r.status_code for r in responses] == [200, 200, 200, 429]
    assert [r.headers["ratelimit-remaining"] for r in responses] == ["2", "1", "0", "0"]
    assert all(r.headers["ratelimit-limit"] == "3" for r in responses)
    refused = responses[-1]
    # Each header once: the 429's own, not a second copy from the admitted path.
    assert all(len(refused.headers.get_list(name)) == 1 for name in ("ratelimit-limit", "retry-after"))
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    assert refused.headers["ratelimit-reset"] == refused.headers["retry-after"]
    assert refused.json()["success"] is False and "3 requests" in refused.json()["data"]["message"]
    # Other credentials are not affected.
    assert platform.client.get(CATALOG, headers=owner.headers).status_code == 200


def test_a_keys_day_limit_is_enforced(platform):
    owner = platform.workspace()
    key = platform.key_actor(owner, rateLimit={"requestsPerMinute": 100, "requestsPerDay": 2})
    statuses = [platform.client.get(CATALOG, headers=key.headers).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]


@pytest.mark.parametrize("settings_overrides", [{"default_requests_per_minute": 2}])
def test_credentials_without_a_limit_get_the_platform_default(platform):
    owner = platform.workspace()
    statuses = [platform.client.get(CATALOG, headers=owner.headers).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]


def test_a_key_refused_for_another_workspace_is_not_counted(platform):
    owner, stranger = platform.workspace(), platform.workspace("other")
    key = platform.key_actor(owner, rateLimit={"requestsPerMinute": 2, "requestsPerDay": 100})
    for _ in range(3):
        refused = platform.client.get(f"/api/v2/api-keys?workspaceId={stranger.workspace_id}", headers=key.headers)
        assert refused.status_code == 403 and "ratelimit-remaining" not in refused.headers
    responses = [platform.client.get(CATALOG, headers=key.headers) for _ in range(3)]
    assert [r.status_code for r in responses] == [200, 200, 429]
    assert [r.headers["ratelimit-remaining"] for r in responses] == ["1", "0", "0"]


@pytest.mark.parametrize("settings_overrides", [{"default_requests_per_minute": 2}])
def test_a_token_refused_for_another_workspace_is_not_counted(platform):
    owner, stranger = platform.workspace(), platform.workspace("other")
    for _ in range(3):
        refused = platform.client.get(f"/api/v2/api-keys?workspaceId={stranger.workspace_id}", headers=owner.headers)
        assert refused.status_code == 403
    statuses = [platform.client.get(CATALOG, headers=owner.headers).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]


def test_a_request_admitted_then_refused_for_its_permission_is_counted(platform):
    owner = platform.workspace()
    key = platform.key_actor(owner, permissions=["agents:read"], rateLimit={"requestsPerMinute": 2, "requestsPerDay": 100})
    refused = platform.client.get(f"/api/v2/api-keys?workspaceId={owner.workspace_id}", headers=key.headers)
    assert refused.status_code == 403 and refused.headers["ratelimit-remaining"] == "1"
    assert [platform.client.get(CATALOG, headers=key.headers).status_code for _ in range(2)] == [200, 429]


@pytest.mark.parametrize("settings_overrides", [{"default_requests_per_minute": 0}])
def test_the_platform_default_can_be_switched_off_alone(platform):
    owner = platform.workspace()
    unlimited = platform.key_actor(owner)
    for actor in (owner, unlimited):  # neither has a limit of its own
        responses = [platform.client.get(CATALOG, headers=actor.headers) for _ in range(5)]
        assert all(r.status_code == 200 and "ratelimit-limit" not in r.headers for r in responses)
    key = platform.key_actor(owner, rateLimit={"requestsPerMinute": 1, "requestsPerDay": 100})
    assert [platform.client.get(CATALOG, headers=key.headers).status_code for _ in range(2)] == [200, 429]


@pytest.mark.parametrize("settings_overrides", [{"rate_limits_enabled": False, "default_requests_per_minute": 1}])
def test_rate_limiting_can_be_switched_off(platform):
    owner = platform.workspace()
    key = platform.key_actor(owner, rateLimit={"requestsPerMinute": 1, "requestsPerDay": 1})
    for headers in (owner.headers, key.headers):
        responses = [platform.client.get(CATALOG, headers=headers) for _ in range(3)]
        assert all(r.status_code == 200 and "ratelimit-limit" not in r.headers for r in responses)


@pytest.mark.postgres
def test_two_worker_processes_on_postgres_admit_exactly_the_limit(tmp_path, scratch_postgres):
    server = start_server(tmp_path, DATABASE_URL=scratch_postgres(), WORKERS=2, RATE_LIMITS_ENABLED="true")
    try:
        owner = server.admin("bootstrap", "--workspace", "w", "--email", "owner@example.com")
        headers = {"Authorization": f"Bearer {owner['token']}"}
        created = httpx.post(f"{server.url}/api/v2/api-keys", params={"workspaceId": owner["workspaceId"]},
                             headers=headers, json={"name": "k", "userId": owner["userId"],
                                                    "rateLimit": {"requestsPerMinute": 1000, "requestsPerDay": 25}})
        key_headers = {"Authorization": f"Bearer {created.json()['data']['result']['key']}"}

        def call(_):
            return httpx.get(f"{server.url}{CATALOG}", headers=key_headers, timeout=30).status_code

        # The day's limit binds: a burst that straddles two minutes (a slow machine) counts the same.
        # 60 requests from 12 threads over fresh connections, which the kernel spreads over both workers.
        with ThreadPoolExecutor(12) as pool:
            statuses = list(pool.map(call, range(60)))
        assert statuses.count(200) == 25 and statuses.count(429) == 35, statuses
    finally:
        stop_server(server)


@pytest.mark.postgres
def test_a_deleted_or_deactivated_key_stops_at_once_in_every_worker(tmp_path, scratch_postgres):
    """Nothing about a credential is cached: the very next request, in whichever process, refuses it."""
    url = scratch_postgres()
    server = start_server(tmp_path, DATABASE_URL=url, WORKERS=2, RATE_LIMITS_ENABLED="true")
    try:
        owner = server.admin("bootstrap", "--workspace", "w", "--email", "owner@example.com")
        params = {"workspaceId": owner["workspaceId"]}
        headers = {"Authorization": f"Bearer {owner['token']}"}

        def new_key() -> tuple[str, dict]:
            r = httpx.post(f"{server.url}/api/v2/api-keys", params=params, headers=headers,
                           json={"name": "k", "userId": owner["userId"]})
            result = r.json()["data"]["result"]
            return result["apiKey"]["id"], {"Authorization": f"Bearer {result['key']}"}

        def statuses(key_headers) -> set[int]:
            # Fresh connections, which the kernel spreads over both workers.
            with ThreadPoolExecutor(8) as pool:
                return set(pool.map(lambda _: httpx.get(f"{server.url}{CATALOG}", headers=key_headers).status_code,
                                    range(24)))

        deleted_id, deleted = new_key()
        deactivated_id, deactivated = new_key()
        assert statuses(deleted) == statuses(deactivated) == {200}
        httpx.delete(f"{server.url}/api/v2/api-keys", params={**params, "ids": deleted_id}, headers=headers)
        from models.identity.tables import ApiKey
        from models.kernel.db import database, open_database, session
        open_database(url, pool_size=1)
        with session():
            ApiKey.update(is_active=False).where(ApiKey.id == deactivated_id).execute()
        database.close_all()
        assert statuses(deleted) == statuses(deactivated) == {401}
    finally:
        stop_server(server)
