"""No acknowledged write is lost when every server process dies with SIGKILL in the middle of a load:
an API key whose creation, or an end-of-call-report whose delivery, was answered 200 is there after
a restart, on both databases."""
from __future__ import annotations

import os
import signal
import threading
import time
import uuid

import httpx
import pytest

from tests.support.processes import descendants
from tests.support.servers import start_server, stop_server


def new_key(owner: dict, n: int) -> tuple[str, dict, callable]:
    return "/api/v2/api-keys", {"name": f"k{n}", "userId": owner["userId"]}, \
        lambda result: result["apiKey"]["id"]


def new_call_report(owner: dict, n: int) -> tuple[str, dict, callable]:
    body = {"type": "end-of-call-report", "callId": str(uuid.uuid4()), "workspaceId": owner["workspaceId"],
            "startedAt": "2026-11-23T09:00:00Z", "endedAt": "2026-11-23T09:01:00Z", "summary": f"call {n}",
            "tags": ["a", "b"]}
    return "/api/v2/webhooks/end-of-call-report", body, lambda result: result["callId"]


def write_until_killed(server, owner: dict, make, acknowledged: list, stop: threading.Event) -> None:
    params = {"workspaceId": owner["workspaceId"]}
    headers = {"Authorization": f"Bearer {owner['token']}"}
    with httpx.Client(timeout=10) as client:
        n = 0
        while not stop.is_set():
            n += 1
            path, body, id_of = make(owner, n)
            try:
                r = client.post(server.url + path, params=params, headers=headers, json=body)
            except httpx.HTTPError:
                continue  # the server is gone: no answer, so nothing was acknowledged
            if r.is_success:  # acknowledged
                acknowledged.append(id_of(r.json()["data"]["result"]))


def kill_every_process(server) -> None:
    """SIGKILL to the master and every process under it at once: nobody gets to shut down."""
    pids = descendants(server.process.pid) | {server.process.pid}
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    server.process.wait(timeout=10)


def listed_ids(server, owner: dict, path: str, items: str) -> set[str]:
    ids, offset = set(), 0
    while True:
        r = httpx.get(f"{server.url}/api/v2{path}", params={"workspaceId": owner["workspaceId"], "limit": 100,
                                                             "offset": offset},
                      headers={"Authorization": f"Bearer {owner['token']}"}, timeout=30)
        assert r.status_code == 200, r.text
        page = r.json()["data"]["result"]
        ids |= {item["id"] for item in page[items]}
        offset += 100
        if offset >= page["pagination"]["total"]:
            return ids


# The calls case repeats the api-keys one with another write path: in the slow run only.
@pytest.mark.parametrize("write, listing", [pytest.param(new_key, ("/api-keys", "apiKeys"), id="api-keys"),
                                            pytest.param(new_call_report, ("/call", "calls"), id="calls",
                                                         marks=pytest.mark.slow)])
@pytest.mark.parametrize("database", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_writes_acknowledged_before_a_sigkill_of_every_process_are_all_there(tmp_path, database, request, write,
                                                                            listing):
    env = {"WORKERS": 2, "RATE_LIMITS_ENABLED": "false"}
    if database == "postgresql":
        env["DATABASE_URL"] = request.getfixturevalue("scratch_postgres")()
    server = start_server(tmp_path, **env)
    owner = server.admin("bootstrap", "--workspace", "w", "--email", "owner@example.com")
    acknowledged: list[str] = []
    stop = threading.Event()
    clients = [threading.Thread(target=write_until_killed, args=(server, owner, write, acknowledged, stop))
               for _ in range(8)]
    for client in clients:
        client.start()
    try:
        deadline = time.monotonic() + 30
        while len(acknowledged) < 100 and time.monotonic() < deadline:
            time.sleep(0.05)
        kill_every_process(server)
    finally:
        stop.set()
        for client in clients:
            client.join(timeout=30)
    assert len(acknowledged) >= 100, len(acknowledged)

    # The same data directory or database, a new set of processes.
    restarted = start_server(tmp_path, **env)
    try:
        missing = set(acknowledged) - listed_ids(restarted, owner, *listing)
        assert not missing, f"{len(missing)} of {len(acknowledged)} acknowledged writes lost"
    finally:
        stop_server(restarted)
