"""Outbound webhooks from real server processes: a process killed mid-delivery loses no event, and
two processes on one PostgreSQL database deliver 1,000 events, each at least once and never by two
at the same moment (the receiver records overlapping requests for one webhook-id)."""
from __future__ import annotations

import signal
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.support import factories
from tests.support.servers import start_server, stop_server
from tests.support.webhook_receiver import Answer, Receiver

ENV = {"RATE_LIMITS_ENABLED": "false", "WEBHOOK_ALLOW_HTTP": "true", "WEBHOOK_ALLOW_PRIVATE_ADDRESSES": "true",
       "SECRET_KEY": "one key for every process", "WEBHOOK_RETRY_BASE_S": "0.2"}


def client_of(server, owner) -> httpx.Client:
    return httpx.Client(base_url=server.url + "/api/v2", headers={"Authorization": f"Bearer {owner['token']}"},
                        params={"workspaceId": owner["workspaceId"]}, timeout=30)


def actor_of(owner) -> factories.Actor:
    return factories.Actor(owner["workspaceId"], owner["userId"], "", "")


def test_a_server_killed_mid_delivery_loses_no_event(tmp_path):
    # An attempt lasts 2 s at most, so a lease runs out 9 s after its claim.
    env = {**ENV, "WEBHOOK_WORKERS": "1", "WEBHOOK_TIMEOUT_S": "2"}
    receiver = Receiver(script=[Answer(200, delay_s=15)])  # holds the first attempt past the kill
    server = start_server(tmp_path, **env)
    try:
        owner = server.admin("bootstrap", "--workspace", "w", "--email", "owner@example.com")
        with client_of(server, owner) as client:
            made = client.post("/webhooks/subscriptions", json={"url": receiver.url, "events": ["end-of-call-report"]})
            assert made.status_code == 200, made.text
            receiver.secrets = [made.json()["data"]["result"]["signingSecret"]]
            report = factories.report(actor_of(owner))
            assert client.post("/webhooks/end-of-call-report", json=report).status_code == 200
            deadline = time.monotonic() + 10
            while not receiver._in_flight and time.monotonic() < deadline:
                time.sleep(0.02)
            assert receiver._in_flight, "the first attempt never arrived"
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=10)
    finally:
        stop_server(server)
    restarted = start_server(tmp_path, **env)  # the same DATA_DIR: its database
    try:
        delivered = [r for r in receiver.wait_for(2, timeout_s=30) if r.verified_with == [0]]
        assert len(delivered) == 2 and delivered[0].headers["webhook-id"] == delivered[1].headers["webhook-id"]
        with client_of(restarted, owner) as client:
            deadline = time.monotonic() + 10
            while True:
                event = client.get(f"/webhooks/events/{delivered[0].headers['webhook-id']}").json()["data"]["result"]["event"]
                if event["status"] == "delivered" or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
        assert event["status"] == "delivered" and event["attempts"] == 2
    finally:
        stop_server(restarted)
        receiver.close()


@pytest.mark.slow  # a soak: 2,000 deliveries
@pytest.mark.postgres
def test_two_processes_deliver_1000_events_each_at_least_once_and_never_at_once(tmp_path, scratch_postgres):
    env = {**ENV, "DATABASE_URL": scratch_postgres(), "WEBHOOK_WORKERS": "2"}
    receiver = Receiver()
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
    servers = [start_server(tmp_path / "one", **env)]
    servers.append(start_server(tmp_path / "two", **env))
    try:
        owner = servers[0].admin("bootstrap", "--workspace", "w", "--email", "owner@example.com")
        with client_of(servers[0], owner) as client:
            made = client.post("/webhooks/subscriptions", json={"url": receiver.url, "events": ["end-of-call-report"]})
            receiver.secrets = [made.json()["data"]["result"]["signingSecret"]]
        reports = [factories.report(actor_of(owner)) for _ in range(1000)]

        def ingest(index: int) -> int:
            with client_of(servers[index % 2], owner) as client:
                return client.post("/webhooks/end-of-call-report", json=reports[index]).status_code

        with ThreadPoolExecutor(8) as pool:
            assert set(pool.map(ingest, range(len(reports)))) == {200}
        received = receiver.wait_for(1000, timeout_s=120)
        ids = {r.headers["webhook-id"] for r in received}
        assert len(ids) == 1000 and all(r.verified_with == [0] for r in received)
        assert receiver.overlaps == []
        with client_of(servers[1], owner) as client:
            delivered = client.get("/webhooks/events", params={"status": "delivered", "limit": 1})
        assert delivered.json()["data"]["result"]["pagination"]["total"] == 1000
    finally:
        for server in servers:
            stop_server(server)
        receiver.close()
