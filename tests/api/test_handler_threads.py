"""Where handlers run (api.app): on the event loop, but for an operation marked ``x-in-thread``,
whose handler may wait on something else than the database and must not stop the process
serving others meanwhile."""
from __future__ import annotations

import socket
import threading

import pytest

from api import contract
from models.webhooks import addresses
from tests.support.client import owner

SLOW_HOST = "slow-to-resolve.example"


@pytest.fixture
def settings_overrides():
    return {"webhook_allow_http": True}


@pytest.fixture
def held_resolution(monkeypatch):
    """getaddrinfo of SLOW_HOST waits until the test releases it; ``entered`` once it is waiting."""
    entered, release = threading.Event(), threading.Event()
    resolve = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if host != SLOW_HOST:
            return resolve(host, *args, **kwargs)
        entered.set()
        release.wait(60)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    # Registration waits for the name as long as it takes here, not its usual 2 s.
    monkeypatch.setitem(addresses.check_url.__kwdefaults__, "resolve_timeout_s", 60.0)
    yield entered, release
    release.set()


def test_the_process_serves_others_while_a_marked_operation_waits_on_a_dns_lookup(platform, held_resolution):
    entered, release = held_resolution
    api = owner(platform)
    created = {}

    def subscribe():
        created["result"] = api("POST", "/webhooks/subscriptions",
                                json={"url": f"http://{SLOW_HOST}/hook", "events": ["end-of-call-report"]})

    poster = threading.Thread(target=subscribe)
    poster.start()
    try:
        assert entered.wait(30), "the subscription's URL was never resolved"
        answered = {}
        getter = threading.Thread(target=lambda: answered.update(
            status=platform.client.get("/api/v2/permissions", headers=api.actor.headers).status_code))
        getter.start()
        getter.join(20)  # while the lookup is held: only a free event loop can answer
        assert answered.get("status") == 200, "GET /permissions waited for another request's DNS lookup"
        assert poster.is_alive()
    finally:
        release.set()
        poster.join(30)
    # A name that does not resolve yet is accepted (and checked again at delivery).
    assert created["result"]["subscription"]["url"] == f"http://{SLOW_HOST}/hook"


def test_the_operations_that_wait_beyond_the_database_are_marked():
    marked = {op.operation_id for op in contract.operations() if op.in_thread}
    assert {"createWebhookSubscription", "updateWebhookSubscription", "purgeRetention"} <= marked
    # A value other than true would be ignored: the extension is true or absent.
    assert all(op.spec.get(contract.IN_THREAD, True) is True for op in contract.operations())
