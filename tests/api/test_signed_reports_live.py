"""Signed end-of-call-reports on two server processes sharing one PostgreSQL database: copies of
one signed request arriving at once are acted on exactly once, the others answered as replays."""
from __future__ import annotations

import threading
import uuid
from datetime import UTC, datetime

import httpx
import orjson
import pytest
from standardwebhooks.webhooks import Webhook

from tests.support import factories
from tests.support.servers import start_server, stop_server

ROUNDS = 20
COPIES = 4


def send(client, raw, headers, barrier, answers, index):
    barrier.wait(10)
    answers[index] = client.post("/webhooks/end-of-call-report", content=raw, headers=headers)


@pytest.mark.slow  # two server processes; replays are tested in-process too
@pytest.mark.postgres
def test_copies_of_a_signed_report_sent_at_once_to_two_workers_are_taken_in_once(tmp_path, scratch_postgres):
    server = start_server(tmp_path, DATABASE_URL=scratch_postgres(), WORKERS=2, RATE_LIMITS_ENABLED="false")
    try:
        owner = server.admin("bootstrap", "--workspace", "w", "--email", "owner@example.com")
        with httpx.Client(base_url=server.url + "/api/v2", timeout=30) as client:
            made = client.post("/webhooks/signing-secrets", json={}, params={"workspaceId": owner["workspaceId"]},
                               headers={"Authorization": f"Bearer {owner['token']}"})
            assert made.status_code == 200, made.text
        secret = made.json()["data"]["result"]["signingSecret"]["secret"]
        actor = factories.Actor(owner["workspaceId"], owner["userId"], "", "")
        clients = [httpx.Client(base_url=server.url + "/api/v2", timeout=30) for _ in range(COPIES)]
        try:
            for _ in range(ROUNDS):
                raw = orjson.dumps(factories.report(actor))
                webhook_id, at = f"msg_{uuid.uuid4().hex}", datetime.now(UTC)
                headers = {"Content-Type": "application/json", "webhook-id": webhook_id,
                           "webhook-timestamp": str(int(at.timestamp())),
                           "webhook-signature": Webhook(secret).sign(webhook_id, at, raw.decode())}
                barrier, answers = threading.Barrier(COPIES), [None] * COPIES
                threads = [threading.Thread(target=send, args=(clients[i], raw, headers, barrier, answers, i))
                           for i in range(COPIES)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join(60)
                assert all(a is not None and a.status_code == 200 for a in answers), [a and a.text for a in answers]
                results = [a.json()["data"]["result"] for a in answers]
                assert sorted(r["replayed"] for r in results) == [False] + [True] * (COPIES - 1), results
                assert sum(r["created"] for r in results) == 1, results
        finally:
            for client in clients:
                client.close()
    finally:
        stop_server(server)
