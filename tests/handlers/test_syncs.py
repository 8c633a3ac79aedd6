"""Syncs of agents and workflows to a runtime, over HTTP and through the worker's attempts, against a
local runtime (tests/support/runtime_server.py): what the runtime gets (the version's configuration,
the integration's secret as a bearer token), retries of a 5xx, a connection or a timeout and none of
a 4xx, a refused address failing at once, a sync whose agent is deleted meanwhile, a dead worker's
lease running out, the list and its filter, and every bad request answered 4xx with a code."""
from __future__ import annotations

import time
from datetime import timedelta

import pytest

from models.configs.tables import Agent
from models.kernel.db import session, utcnow
from models.syncs import syncs
from models.syncs.tables import ConfigSync
from models.webhooks import addresses
from tests.support import factories
from tests.support.client import owner
from tests.support.runtime_server import Answer, Runtime

SECRET = "runtime-bearer-0123456789"


LOCAL = {"webhook_allow_http": True, "webhook_allow_private_addresses": True}


@pytest.fixture
def settings_overrides():
    """The local runtime is on 127.0.0.1, which a server allows only when told (as webhook tests do)."""
    return LOCAL


@pytest.fixture
def runtime():
    server = Runtime()
    yield server
    server.close()


def _setup(platform, runtime):
    api = owner(platform)
    agent_id = factories.agent(api.actor, name="Front desk")
    integration_id = factories.runtime(api.actor, base_url=runtime.url, secret=SECRET)
    return api, agent_id, integration_id


def _sync(api, agent_id, integration_id, expect=200, **body):
    return api("POST", f"/agents/{agent_id}/syncs", expect, json={"integrationId": integration_id, **body})


def test_a_sync_pushes_the_live_version_with_the_bearer_and_succeeds(platform, runtime):
    api, agent_id, integration_id = _setup(platform, runtime)
    factories.save_versions(api.actor, agent_id, 1)  # version 2, not published: the live one stays 1
    agent = api("GET", f"/agents/{agent_id}")["agent"]
    queued = _sync(api, agent_id, integration_id)["sync"]
    assert queued["status"] == "queued" and queued["attempts"] == 0 and queued["response"] is None
    assert queued["agentId"] == agent_id and queued["version"] == 1 and queued["integrationId"] == integration_id
    assert queued["versionId"] == agent["publishedVersionId"] and queued["finishedAt"] is None
    runtime.script = [Answer(200, body=b'{"accepted":true}')]
    assert factories.run_syncs() == [(queued["id"], "succeeded")]
    [pushed] = runtime.pushed(1)
    assert pushed.bearer == SECRET and pushed.headers["idempotency-key"] == queued["id"]
    assert pushed.headers["content-type"] == "application/json"
    assert pushed.body == {"syncId": queued["id"], "workspaceId": api.actor.workspace_id, "entityType": "agent",
                           "agentId": agent_id, "name": "Front desk", "versionId": queued["versionId"], "version": 1,
                           "versionName": "Version 1", "config": agent["liveConfig"]}
    done = api("GET", f"/agents/{agent_id}/syncs/{queued['id']}")["sync"]
    assert done["status"] == "succeeded" and done["attempts"] == 1 and done["error"] is None
    assert done["response"]["status"] == 200 and done["response"]["body"] == '{"accepted":true}'
    assert done["response"]["latencyMs"] >= 0 and done["finishedAt"] >= done["createdAt"]
    # No answer or audit entry carries the secret.
    assert SECRET not in str(done) and SECRET not in str(api("GET", "/workspace/logs"))


def test_a_named_version_is_pushed_and_an_unknown_one_is_not_found(platform, runtime):
    api, agent_id, integration_id = _setup(platform, runtime)
    factories.save_versions(api.actor, agent_id, 1)
    sync = _sync(api, agent_id, integration_id, version=2)["sync"]
    assert sync["version"] == 2
    factories.run_syncs()
    assert runtime.pushed(1)[0].body["config"]["prompt"] == "Prompt number 0"
    for missing in (3, 2147483647):
        error = _sync(api, agent_id, integration_id, 404, version=missing)
        assert error == {"code": "not_found", "message": f"version: the agent has no version {missing}.", "result": None}
    assert _sync(api, agent_id, integration_id, 400, version=0)["code"] == "validation_failed"


def test_a_workflow_sync_pushes_the_workflow(platform, runtime):
    api, agent_id, integration_id = _setup(platform, runtime)
    workflow_id = factories.workflow(api.actor, [agent_id], name="Routing")
    sync = api("POST", f"/workflows/{workflow_id}/syncs", json={"integrationId": integration_id})["sync"]
    assert sync["workflowId"] == workflow_id and "agentId" not in sync
    assert factories.run_syncs() == [(sync["id"], "succeeded")]
    body = runtime.pushed(1)[0].body
    assert body["entityType"] == "workflow" and body["workflowId"] == workflow_id and body["name"] == "Routing"
    assert [node["type"] for node in body["config"]["nodes"]] == ["start", "agent", "end"]
    listed = api("GET", f"/workflows/{workflow_id}/syncs")
    assert [s["status"] for s in listed["syncs"]] == ["succeeded"]
    # A workflow's sync is not an agent's.
    assert api("GET", f"/agents/{workflow_id}/syncs/{sync['id']}", 404)["code"] == "not_found"


def test_a_5xx_is_retried_until_the_runtime_takes_it(platform, runtime):
    api, agent_id, integration_id = _setup(platform, runtime)
    sync_id = _sync(api, agent_id, integration_id)["sync"]["id"]
    runtime.script = [Answer(500, body=b"busy"), Answer(200)]
    assert factories.run_syncs() == [(sync_id, "queued"), (sync_id, "succeeded")]
    assert len(runtime.pushed(2)) == 2
    done = api("GET", f"/agents/{agent_id}/syncs/{sync_id}")["sync"]
    assert done["status"] == "succeeded" and done["attempts"] == 2 and done["response"]["status"] == 200


def test_a_waiting_retry_shows_the_last_answer_and_its_reason(platform, runtime):
    api, agent_id, integration_id = _setup(platform, runtime)
    sync_id = _sync(api, agent_id, integration_id)["sync"]["id"]
    runtime.script = [Answer(503, body=b"down for maintenance")]
    with session():
        job = syncs.claim(60)
    from api.sync_worker import attempt
    assert attempt(job, timeout_s=5, retry_base_s=3600) == "queued"
    waiting = api("GET", f"/agents/{agent_id}/syncs/{sync_id}")["sync"]
    assert waiting["status"] == "queued" and waiting["attempts"] == 1
    assert waiting["response"]["status"] == 503 and waiting["response"]["body"] == "down for maintenance"
    assert waiting["error"] == "The receiver answered 503."
    with session():
        assert syncs.claim(60) is None  # its backoff holds


def test_a_sync_fails_after_its_last_attempt_with_the_reason(platform, runtime):
    api, agent_id, integration_id = _setup(platform, runtime)
    sync_id = _sync(api, agent_id, integration_id)["sync"]["id"]
    runtime.script = [Answer(502)] * syncs.MAX_ATTEMPTS
    outcomes = factories.run_syncs()
    assert outcomes == [(sync_id, "queued")] * (syncs.MAX_ATTEMPTS - 1) + [(sync_id, "failed")]
    failed = api("GET", f"/agents/{agent_id}/syncs/{sync_id}")["sync"]
    assert failed["attempts"] == syncs.MAX_ATTEMPTS
    assert failed["error"] == f"Gave up after {syncs.MAX_ATTEMPTS} attempts; the last: The receiver answered 502."


@pytest.mark.parametrize("status", [400, 401, 404, 422, 301])
def test_a_4xx_or_a_redirect_fails_at_once(platform, runtime, status):
    api, agent_id, integration_id = _setup(platform, runtime)
    sync_id = _sync(api, agent_id, integration_id)["sync"]["id"]
    runtime.script = [Answer(status, body=b'{"error":"unknown field prompt"}')]
    assert factories.run_syncs() == [(sync_id, "failed")]
    failed = api("GET", f"/agents/{agent_id}/syncs/{sync_id}")["sync"]
    assert failed["attempts"] == 1 and failed["response"]["status"] == status
    assert failed["response"]["body"] == '{"error":"unknown field prompt"}'
    assert failed["error"].startswith(f"The receiver answered {status}")


def test_only_the_first_kilobyte_of_the_answer_is_kept(platform, runtime):
    api, agent_id, integration_id = _setup(platform, runtime)
    sync_id = _sync(api, agent_id, integration_id)["sync"]["id"]
    runtime.script = [Answer(200, body=b"y" * 5000)]
    factories.run_syncs()
    assert api("GET", f"/agents/{agent_id}/syncs/{sync_id}")["sync"]["response"]["body"] == "y" * 1024


def test_a_refused_address_fails_at_once_and_nothing_is_sent(platform, runtime, monkeypatch):
    api, agent_id, integration_id = _setup(platform, runtime)
    sync_id = _sync(api, agent_id, integration_id)["sync"]["id"]
    # As a server without WEBHOOK_ALLOW_PRIVATE_ADDRESSES: the URL stored while it was allowed is refused now.
    monkeypatch.setattr(addresses, "_policy", addresses.Policy(allow_http=True, allow_private=False))
    assert factories.run_syncs() == [(sync_id, "failed")]
    failed = api("GET", f"/agents/{agent_id}/syncs/{sync_id}")["sync"]
    assert failed["attempts"] == 1 and failed["response"] is None
    assert failed["error"].startswith("Not sent: ") and "loopback" in failed["error"]
    assert runtime.received == []


def test_a_slow_runtime_is_cut_off_at_the_time_limit_and_retried(platform, runtime):
    api, agent_id, integration_id = _setup(platform, runtime)
    sync_id = _sync(api, agent_id, integration_id)["sync"]["id"]
    runtime.script = [Answer(200, delay_s=3.0), Answer(200)]
    started = time.monotonic()
    assert factories.run_syncs(timeout_s=0.5) == [(sync_id, "queued"), (sync_id, "succeeded")]
    assert time.monotonic() - started < 2.5
    done = api("GET", f"/agents/{agent_id}/syncs/{sync_id}")["sync"]
    assert done["status"] == "succeeded" and done["attempts"] == 2


def test_a_refused_connection_is_retried(platform):
    api = owner(platform)
    agent_id = factories.agent(api.actor)
    closed = Runtime()
    url = closed.url
    closed.close()  # nothing listens there any more
    integration_id = factories.runtime(api.actor, base_url=url)
    sync_id = _sync(api, agent_id, integration_id)["sync"]["id"]
    outcomes = factories.run_syncs()
    assert outcomes[0] == (sync_id, "queued") and outcomes[-1] == (sync_id, "failed")
    assert len(outcomes) == syncs.MAX_ATTEMPTS
    failed = api("GET", f"/agents/{agent_id}/syncs/{sync_id}")["sync"]
    assert failed["error"].startswith(f"Gave up after {syncs.MAX_ATTEMPTS} attempts; the last: The connection failed")


def test_a_sync_of_an_agent_deleted_meanwhile_fails_saying_so(platform, runtime):
    api, agent_id, integration_id = _setup(platform, runtime)
    sync_id = _sync(api, agent_id, integration_id)["sync"]["id"]
    api("DELETE", f"/agents/{agent_id}")
    assert factories.run_syncs() == [(sync_id, "failed")]
    failed = api("GET", f"/agents/{agent_id}/syncs/{sync_id}")["sync"]
    assert failed["error"] == "The agent was deleted before its configuration was pushed: nothing was sent."
    assert api("GET", f"/agents/{agent_id}/syncs")["pagination"]["total"] == 1  # still listed
    assert runtime.received == []


def test_a_sync_whose_integration_is_deleted_meanwhile_fails_saying_so(platform, runtime):
    api, agent_id, integration_id = _setup(platform, runtime)
    sync_id = _sync(api, agent_id, integration_id)["sync"]["id"]
    api("DELETE", f"/integrations/{integration_id}")
    assert factories.run_syncs() == [(sync_id, "failed")]
    assert api("GET", f"/agents/{agent_id}/syncs/{sync_id}")["sync"]["error"].startswith("The integration was deleted")


def test_a_dead_workers_sync_is_taken_again_once_its_lease_runs_out(platform, runtime):
    api, agent_id, integration_id = _setup(platform, runtime)
    sync_id = _sync(api, agent_id, integration_id)["sync"]["id"]
    with session():
        dead = syncs.claim(lease_s=30)
        assert api("GET", f"/agents/{agent_id}/syncs/{sync_id}")["sync"]["status"] == "running"
        assert syncs.claim(lease_s=30) is None  # its lease holds
        taken = syncs.claim(lease_s=30, now=utcnow() + timedelta(seconds=31))
    assert taken.sync_id == sync_id and taken.attempt == dead.attempt + 1
    from api.sync_worker import attempt
    assert attempt(taken, timeout_s=5, retry_base_s=0) == "succeeded"
    # The dead worker's late outcome changes nothing.
    assert attempt(dead, timeout_s=5, retry_base_s=0) is None
    done = api("GET", f"/agents/{agent_id}/syncs/{sync_id}")["sync"]
    assert done["status"] == "succeeded" and done["attempts"] == 2


def test_a_sync_claimed_past_its_attempts_fails(platform, runtime):
    api, agent_id, integration_id = _setup(platform, runtime)
    sync_id = _sync(api, agent_id, integration_id)["sync"]["id"]
    with session():
        ConfigSync.update(attempts=syncs.MAX_ATTEMPTS).where(ConfigSync.id == sync_id).execute()
    assert factories.run_syncs() == [(sync_id, "failed")]
    failed = api("GET", f"/agents/{agent_id}/syncs/{sync_id}")["sync"]
    assert failed["error"] == f"The sync stopped before it finished, {syncs.MAX_ATTEMPTS} times."
    assert runtime.received == []


@pytest.mark.parametrize("settings_overrides", [{**LOCAL, "sync_workers": 1}])
def test_the_worker_thread_pushes_a_queued_sync(platform, runtime):
    api, agent_id, integration_id = _setup(platform, runtime)
    sync_id = _sync(api, agent_id, integration_id)["sync"]["id"]
    deadline = time.monotonic() + 20
    while (status := api("GET", f"/agents/{agent_id}/syncs/{sync_id}")["sync"]["status"]) != "succeeded":
        assert time.monotonic() < deadline, status
        time.sleep(0.1)
    assert runtime.pushed(1)[0].bearer == SECRET


def test_no_live_version_is_a_conflict(platform, runtime):
    api, agent_id, integration_id = _setup(platform, runtime)
    with session():
        Agent.update(published_version_id=None).where(Agent.id == agent_id).execute()
    error = _sync(api, agent_id, integration_id, 409)
    assert error["code"] == "conflict" and "no live version" in error["message"]
    assert _sync(api, agent_id, integration_id, version=1)["sync"]["version"] == 1  # a named one still goes


def test_the_integration_must_be_a_runtime_of_the_workspace(platform, runtime):
    api, agent_id, integration_id = _setup(platform, runtime)
    crm = factories.integration(api.actor, kind="crm", base_url="https://crm.example.com")
    error = _sync(api, agent_id, crm, 400)
    assert error["code"] == "validation_failed" and "crm integration" in error["message"]
    no_url = factories.integration(api.actor, kind="crm")
    assert _sync(api, agent_id, no_url, 400)["code"] == "validation_failed"
    other = owner(platform)
    foreign = factories.runtime(other.actor)
    error = _sync(api, agent_id, foreign, 404)
    assert error["code"] == "not_found" and "integration" in error["message"]
    assert _sync(api, agent_id, "not-a-uuid", 400)["code"] == "validation_failed"
    assert api("POST", f"/agents/{agent_id}/syncs", 400, json={})["code"] == "validation_failed"
    assert api("POST", f"/agents/{agent_id}/syncs", 400,
               json={"integrationId": integration_id, "extra": 1})["code"] == "validation_failed"
    assert api("GET", f"/agents/{agent_id}/syncs")["syncs"] == []  # nothing was queued


def test_ids_of_another_workspace_are_not_found(platform, runtime):
    api, agent_id, integration_id = _setup(platform, runtime)
    sync_id = _sync(api, agent_id, integration_id)["sync"]["id"]
    other = owner(platform)
    other_agent = factories.agent(other.actor)
    other_runtime = factories.runtime(other.actor)
    # Their agent, with our integration or theirs, from our workspace.
    assert _sync(api, other_agent, integration_id, 404)["code"] == "not_found"
    assert _sync(api, other_agent, other_runtime, 404)["code"] == "not_found"
    # Our agent and sync, read from their workspace.
    assert _sync(other, agent_id, other_runtime, 404)["code"] == "not_found"
    assert other("GET", f"/agents/{agent_id}/syncs", 404)["code"] == "not_found"
    assert other("GET", f"/agents/{agent_id}/syncs/{sync_id}", 404)["code"] == "not_found"
    assert other("GET", f"/agents/{other_agent}/syncs/{sync_id}", 404)["code"] == "not_found"
    # Another agent of ours does not show this agent's sync.
    second = factories.agent(api.actor)
    assert api("GET", f"/agents/{second}/syncs/{sync_id}", 404)["code"] == "not_found"
    assert api("GET", f"/agents/{second}/syncs")["syncs"] == []


def test_the_list_is_newest_first_paginated_and_filtered_by_status(platform, runtime):
    api, agent_id, integration_id = _setup(platform, runtime)
    ids = [_sync(api, agent_id, integration_id)["sync"]["id"] for _ in range(3)]
    runtime.script = [Answer(200), Answer(400)]
    factories.run_syncs()  # the oldest succeeds, the second fails, the newest...
    runtime.script = []
    page = api("GET", f"/agents/{agent_id}/syncs", limit=2)
    assert page["pagination"] == {"total": 3, "limit": 2, "offset": 0}
    assert [s["id"] for s in page["syncs"]] == ids[::-1][:2]
    assert [s["id"] for s in api("GET", f"/agents/{agent_id}/syncs", limit=2, offset=2)["syncs"]] == ids[:1]
    statuses = {s["id"]: s["status"] for s in api("GET", f"/agents/{agent_id}/syncs", limit=3)["syncs"]}
    failed = api("GET", f"/agents/{agent_id}/syncs", status="failed")
    assert [s["id"] for s in failed["syncs"]] == [i for i in ids[::-1] if statuses[i] == "failed"]
    assert failed["pagination"]["total"] == list(statuses.values()).count("failed") >= 1
    assert api("GET", f"/agents/{agent_id}/syncs", status="running")["syncs"] == []
    assert api("GET", f"/agents/{agent_id}/syncs", 400, status="done")["code"] == "validation_failed"
    assert api("GET", f"/agents/{agent_id}/syncs", 400, limit=0)["code"] == "validation_failed"
    missing = "00000000-0000-4000-8000-000000000000"
    assert api("GET", f"/agents/{missing}/syncs", 404)["code"] == "not_found"
    assert api("GET", f"/agents/{agent_id}/syncs/{missing}", 404)["code"] == "not_found"


def test_a_viewer_reads_syncs_but_cannot_start_one(platform, runtime):
    api, agent_id, integration_id = _setup(platform, runtime)
    sync_id = _sync(api, agent_id, integration_id)["sync"]["id"]
    viewer = factories.member(api.actor, "viewer")
    response = platform.client.post(f"/api/v2/agents/{agent_id}/syncs", headers=viewer.headers,
                                    params={"workspaceId": api.actor.workspace_id},
                                    json={"integrationId": integration_id})
    assert response.status_code == 403 and response.json()["data"]["code"] == "forbidden"
    response = platform.client.get(f"/api/v2/agents/{agent_id}/syncs/{sync_id}", headers=viewer.headers,
                                   params={"workspaceId": api.actor.workspace_id})
    assert response.status_code == 200
