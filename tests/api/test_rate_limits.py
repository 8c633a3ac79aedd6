"""Rate limits over HTTP: a key's own limit, the platform default, switching it off, several workers;
and the limit of each client address on the operations without a credential."""
from __future__ import annotations

import secrets
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from api.contract import operations
from tests.support.examples import encoded, example_request
from tests.support.servers import start_server, stop_server

CATALOG = "/api/v2/permissions"
ACCEPT = "/api/v2/invitations/accept"
# Accepting an invitation today; signing in and share links as they come.
ANONYMOUS = [o for o in operations() if not o.secured]


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


# --- operations without a credential: counted per client address --------------------------------

def anonymous_request(client, op):
    path, params, body = example_request(op, "")
    content, headers = encoded(op, body)
    return client.request(op.method.upper(), "/api/v2" + path, params=params, content=content, headers=headers)


def accept(client, token: str | None = None):
    return client.post(ACCEPT, json={"token": token or "vai_" + secrets.token_urlsafe(32)})


def assert_limited(response, limit: int, window_s: int) -> None:
    assert response.status_code == 429, response.text
    assert response.json()["success"] is False and response.json()["data"]["code"] == "rate_limited"
    assert f"{limit} requests" in response.json()["data"]["message"]
    assert all(len(response.headers.get_list(name)) == 1
               for name in ("retry-after", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"))
    assert response.headers["ratelimit-limit"] == str(limit) and response.headers["ratelimit-remaining"] == "0"
    assert 1 <= int(response.headers["retry-after"]) <= window_s
    assert response.headers["ratelimit-reset"] == response.headers["retry-after"]


def test_the_walk_finds_the_operations_without_a_credential():
    # Not an empty walk: accepting an invitation is one, whatever others join it.
    assert "acceptInvitation" in {o.operation_id for o in ANONYMOUS}


@pytest.mark.parametrize("settings_overrides", [{"anonymous_requests_per_minute": 3}])
@pytest.mark.parametrize("op", ANONYMOUS, ids=[o.operation_id for o in ANONYMOUS])
def test_every_operation_without_a_credential_is_limited_per_client_address(platform, op):
    responses = [anonymous_request(platform.client, op) for _ in range(4)]
    admitted, refused = responses[:3], responses[3]
    # Answered as usual (the contract's example token is no invitation's: 400), saying what is left.
    assert all(r.status_code == admitted[0].status_code != 429 for r in admitted), [r.text for r in admitted]
    assert [r.headers["ratelimit-remaining"] for r in admitted] == ["2", "1", "0"]
    assert all(r.headers["ratelimit-limit"] == "3" and 1 <= int(r.headers["ratelimit-reset"]) <= 60
               and "retry-after" not in r.headers for r in admitted)
    assert_limited(refused, 3, 60)


@pytest.mark.parametrize("settings_overrides", [{"anonymous_requests_per_minute": 100,
                                                 "anonymous_requests_per_day": 2}])
def test_the_day_limit_of_a_client_address_holds(platform):
    responses = [accept(platform.client) for _ in range(3)]
    assert [r.status_code for r in responses] == [400, 400, 429]
    assert_limited(responses[-1], 2, 86_400)


@pytest.mark.parametrize("settings_overrides", [{"anonymous_requests_per_minute": 2}])
def test_requests_refused_before_the_handler_count_too(platform):
    client = platform.client.unchecked
    missing = client.post(ACCEPT, json={})
    malformed = client.post(ACCEPT, content=b"{", headers={"Content-Type": "application/json"})
    assert (missing.status_code, malformed.status_code) == (400, 400)
    assert [missing.headers["ratelimit-remaining"], malformed.headers["ratelimit-remaining"]] == ["1", "0"]
    # Past the limit a request is refused for it, whatever else is wrong with it.
    assert_limited(client.post(ACCEPT, json={}), 2, 60)
    assert_limited(accept(platform.client), 2, 60)


@pytest.mark.parametrize("settings_overrides", [{"anonymous_requests_per_minute": 1}])
def test_client_addresses_are_counted_apart(platform):
    first, second = platform.client_at("203.0.113.5"), platform.client_at("203.0.113.6")
    assert accept(first).status_code == 400
    assert_limited(accept(first), 1, 60)
    assert accept(second).status_code == 400
    # The first host over IPv6, as an IPv4-mapped address, is the same client.
    assert_limited(accept(platform.client_at("::ffff:203.0.113.5")), 1, 60)


@pytest.mark.parametrize("settings_overrides", [{"anonymous_requests_per_minute": 1}])
def test_ipv6_clients_are_counted_per_64_bit_prefix(platform):
    assert accept(platform.client_at("2001:db8:0:1::1")).status_code == 400
    # Another address of the same /64, its last one: the same host.
    assert_limited(accept(platform.client_at("2001:db8:0:1:ffff:ffff:ffff:ffff")), 1, 60)
    # The /64 next to it, either side: another client.
    assert accept(platform.client_at("2001:db8:0:2::")).status_code == 400
    assert accept(platform.client_at("2001:db8:0:0:ffff:ffff:ffff:ffff")).status_code == 400


@pytest.mark.parametrize("settings_overrides", [{"anonymous_requests_per_minute": 1}])
def test_credentials_and_client_addresses_are_counted_apart(platform):
    owner, client = platform.workspace(), platform.client_at("203.0.113.9")
    assert all(client.get(CATALOG, headers=owner.headers).status_code == 200 for _ in range(3))
    assert accept(client).status_code == 400
    assert_limited(accept(client), 1, 60)
    assert client.get(CATALOG, headers=owner.headers).status_code == 200


@pytest.mark.parametrize("settings_overrides", [{"rate_limits_enabled": False, "anonymous_requests_per_minute": 1},
                                                {"anonymous_requests_per_minute": 0}],
                         ids=["rate limits off", "anonymous limit 0"])
def test_the_limit_of_client_addresses_can_be_switched_off(platform):
    responses = [accept(platform.client) for _ in range(5)]
    assert all(r.status_code == 400 and "ratelimit-limit" not in r.headers for r in responses)


@pytest.mark.slow  # two server processes; the count's exactness is tested in-process too
@pytest.mark.postgres
def test_two_worker_processes_on_postgres_admit_exactly_the_limit_of_an_address(tmp_path, scratch_postgres):
    server = start_server(tmp_path, DATABASE_URL=scratch_postgres(), WORKERS=2, RATE_LIMITS_ENABLED="true",
                          ANONYMOUS_REQUESTS_PER_MINUTE=1000, ANONYMOUS_REQUESTS_PER_DAY=25)
    try:
        def call(_):
            return httpx.post(f"{server.url}{ACCEPT}", json={"token": "vai_" + secrets.token_urlsafe(32)},
                              timeout=30).status_code

        # Fresh connections from 12 threads, which the kernel spreads over both workers.
        with ThreadPoolExecutor(12) as pool:
            statuses = list(pool.map(call, range(60)))
        assert statuses.count(400) == 25 and statuses.count(429) == 35, statuses
    finally:
        stop_server(server)


def forwarded_statuses(server, *clients: str) -> list[int]:
    return [httpx.post(f"{server.url}{ACCEPT}", json={"token": "vai_" + secrets.token_urlsafe(32)},
                       headers={"X-Forwarded-For": client}).status_code for client in clients]


@pytest.mark.slow  # a server process of its own
def test_behind_a_trusted_proxy_the_forwarded_client_is_counted(tmp_path):
    # The tests' requests come from 127.0.0.1, which FORWARDED_ALLOW_IPS trusts by default: a proxy on this host.
    server = start_server(tmp_path, RATE_LIMITS_ENABLED="true", ANONYMOUS_REQUESTS_PER_MINUTE=1)
    try:
        # A proxy appends the peer it saw: the last address is the client, whatever the client wrote before it.
        assert forwarded_statuses(server, "203.0.113.7", "198.51.100.1, 203.0.113.7", "203.0.113.8") == [400, 429, 400]
    finally:
        stop_server(server)


@pytest.mark.slow  # a server process of its own
def test_x_forwarded_for_from_a_peer_not_trusted_is_ignored(tmp_path):
    server = start_server(tmp_path, RATE_LIMITS_ENABLED="true", ANONYMOUS_REQUESTS_PER_MINUTE=1,
                          FORWARDED_ALLOW_IPS="192.0.2.1")
    try:
        assert forwarded_statuses(server, "203.0.113.7", "203.0.113.8") == [400, 429]
    finally:
        stop_server(server)
