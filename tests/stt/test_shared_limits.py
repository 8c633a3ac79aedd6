"""One rate limit across both servers and every worker: a key's requests to the management API (2
worker processes) and to the speech server, sent at once, are admitted exactly up to its limit."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.support.servers import free_port, start_server, stop_server, wait_until_ready
from tests.support.speech_server import make_key


@pytest.mark.parametrize("database", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_a_keys_limit_holds_exactly_across_both_servers(tmp_path, converted_model, database, request):
    stt_port = free_port()
    env = {"WORKERS": 2, "STT_ENABLED": "true", "STT_PORT": stt_port, "STT_MODEL_PATH": converted_model,
           "RATE_LIMITS_ENABLED": "true"}
    if database == "postgresql":
        env["DATABASE_URL"] = request.getfixturevalue("scratch_postgres")()
    server = start_server(tmp_path, **env)
    stt_url = f"http://127.0.0.1:{stt_port}"
    try:
        wait_until_ready(stt_url + "/ready", 90)
        owner = server.admin("bootstrap", "--workspace", "w", "--email", "owner@example.com")
        # The day's limit binds, so that a minute turning during the burst changes nothing.
        key = make_key(server.env, owner, rate_limit=(10_000, 40))
        headers = {"Authorization": f"Bearer {key}"}
        urls = [f"{server.url}/api/v2/permissions", f"{stt_url}/v1/models"] * 50

        def call(url: str) -> int:
            # A connection of its own, so the kernel spreads the API's over both workers.
            return httpx.get(url, headers=headers, timeout=60).status_code

        with ThreadPoolExecutor(16) as pool:
            statuses = list(pool.map(call, urls))
        assert statuses.count(200) == 40 and statuses.count(429) == 60, statuses
        # Both servers admitted some: the count is shared, not per server.
        assert 200 in statuses[0::2] and 200 in statuses[1::2]
    finally:
        stop_server(server)
