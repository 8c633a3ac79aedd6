"""Web-call tokens over HTTP: issued for a version of an agent of the workspace (the live one by
default), shown once and stored hashed, redeemed once without a credential (also when redemptions
race, and on PostgreSQL while another is in flight), refused alike whatever is wrong with them,
expiring at their bound, limited per client address, and audited without the token."""
from __future__ import annotations

import hashlib
import threading
import time
from datetime import datetime, timedelta

import pytest

from models.call_access import web_tokens
from models.call_access.tables import WebCallToken
from models.configs.tables import Agent
from models.kernel.db import database, session, utcnow
from tests.support import factories
from tests.support.client import Api, owner
from tests.support.threads import run_threads

REDEEM = "/api/v2/web-calls/redeem"
TOKEN_FIELDS = {"id", "workspaceId", "agentId", "versionId", "versionNumber", "createdBy", "createdAt", "expiresAt",
                "redeemedAt", "status"}
REFUSAL = "This web-call token is not valid: it is unknown, already used or expired. Ask for a new one."


def issue(api: Api, expect: int = 200, **body) -> dict:
    return api("POST", "/web-calls/tokens", expect, json=body)


def redeem(client, token) -> tuple[int, dict]:
    response = client.post(REDEEM, json={"token": token})
    return response.status_code, response.json()["data"]


def _at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.rstrip("Z"))


def test_a_token_is_issued_once_for_the_live_version_and_redeemed_once_without_a_credential(platform):
    api = owner(platform)
    agent = factories.agent(api.actor, name="Front desk")
    factories.save_versions(api.actor, agent, 1)  # version 2, a draft: the live version stays 1
    live = api.versions(agent)[-1]
    made = issue(api, agentId=agent)
    token, record = made["token"], made["webCallToken"]
    assert set(record) == TOKEN_FIELDS and made["expiresAt"] == record["expiresAt"]
    assert {k: record[k] for k in ("workspaceId", "agentId", "versionId", "versionNumber", "createdBy",
                                   "redeemedAt", "status")} == {
        "workspaceId": api.actor.workspace_id, "agentId": agent, "versionId": live["id"], "versionNumber": 1,
        "createdBy": api.actor.user_id, "redeemedAt": None, "status": "active"}
    assert token.startswith("vaw_") and len(token) == 47 and token != issue(api, agentId=agent)["token"]
    # Stored as its SHA-256 only.
    with session():
        row = WebCallToken.get_by_id(record["id"])
    assert row.token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert token not in str(row.__data__) and token[4:] not in str(row.__data__)
    # Listed, never with the token.
    listed = api("GET", "/web-calls/tokens")
    assert listed["pagination"] == {"total": 2, "limit": 20, "offset": 0} and record in listed["webCallTokens"]
    assert token not in str(listed)
    # Redeemed with no credential at all: what it names, and that version's configuration.
    status, data = redeem(platform.client, token)
    config = api("GET", f"/versions/agent/{agent}/{live['id']}")["version"]["config"]
    assert status == 200 and data["result"] == {"workspaceId": api.actor.workspace_id, "agentId": agent,
                                                "versionId": live["id"], "versionNumber": 1, "config": config,
                                                "tokenId": record["id"]}
    # Once.
    assert redeem(platform.client, token) == (401, {"message": REFUSAL, "code": "unauthenticated", "result": None})
    spent = next(t for t in api("GET", "/web-calls/tokens")["webCallTokens"] if t["id"] == record["id"])
    assert spent["status"] == "redeemed" and spent["redeemedAt"] is not None


def test_a_named_version_of_the_agent_is_taken_and_one_of_another_agent_or_workspace_refused(platform):
    api = owner(platform)
    agent, other = factories.agent(api.actor), factories.agent(api.actor)
    factories.save_versions(api.actor, agent, 2)
    versions = {v["versionNumber"]: v["id"] for v in api.versions(agent)}
    made = issue(api, agentId=agent, versionId=versions[3])["webCallToken"]
    assert (made["versionId"], made["versionNumber"]) == (versions[3], 3)
    status, data = redeem(platform.client, issue(api, agentId=agent, versionId=versions[2])["token"])
    assert status == 200 and data["result"]["versionNumber"] == 2
    assert data["result"]["config"]["prompt"] == "Prompt number 0"
    # A version of another agent of the workspace.
    other_version = api.versions(other)[0]["id"]
    refused = issue(api, 400, agentId=agent, versionId=other_version)
    assert refused["code"] == "validation_failed" and refused["message"].startswith("versionId: ")
    # Another workspace's agent, and another workspace's version of it.
    stranger = platform.workspace("other")
    foreign_agent = factories.agent(stranger)
    foreign_version = Api(platform, stranger).versions(foreign_agent)[0]["id"]
    assert issue(api, 400, agentId=foreign_agent)["message"] == f"agentId: no agent {foreign_agent} in this workspace."
    assert issue(api, 400, agentId=agent, versionId=foreign_version)["message"].startswith("versionId: ")
    assert issue(api, 400, agentId="3f2a1b0c-9d8e-4f7a-8b6c-5d4e3f2a1b0c")["message"].startswith("agentId: ")
    # Only the two good ones were issued.
    assert api("GET", "/web-calls/tokens")["pagination"]["total"] == 2
    assert Api(platform, stranger)("GET", "/web-calls/tokens")["webCallTokens"] == []


def test_an_agent_without_a_live_version_needs_one_named(platform):
    api = owner(platform)
    agent = factories.agent(api.actor)
    with session():
        Agent.update(published_version_id=None).where(Agent.id == agent).execute()
    assert "no live version" in issue(api, 409, agentId=agent)["message"]
    assert issue(api, agentId=agent, versionId=api.versions(agent)[0]["id"])["webCallToken"]["versionNumber"] == 1


def test_ttl_seconds_is_30_to_900_and_300_by_default(platform):
    api = owner(platform)
    agent = factories.agent(api.actor)
    for ttl, expected in ((None, 300), (30, 30), (900, 900)):
        made = issue(api, agentId=agent, **({} if ttl is None else {"ttlSeconds": ttl}))["webCallToken"]
        assert _at(made["expiresAt"]) - _at(made["createdAt"]) == timedelta(seconds=expected)
    for ttl in (29, 901, 0, -1):
        assert "ttlSeconds" in issue(api, 400, agentId=agent, ttlSeconds=ttl)["message"]
    assert "ttlSeconds" in issue(api, 400, agentId=agent, ttlSeconds="60")["message"]
    assert "agentId" in issue(api, 400)["message"]
    assert "token" in issue(api, 400, agentId=agent, token="x")["message"]  # no field but those documented


def test_a_token_works_until_its_expiry_exactly(platform):
    actor = platform.workspace()
    agent = factories.agent(actor)
    issued_at = datetime(2030, 1, 1, 12, 0, 0)
    _, at_bound = factories.web_call_token(actor, agent, ttl_seconds=30, now=issued_at)
    _, before_bound = factories.web_call_token(actor, agent, ttl_seconds=30, now=issued_at)
    with session():
        with pytest.raises(web_tokens.WebTokenRefused):
            web_tokens.redeem(at_bound, now=issued_at + timedelta(seconds=30))
        assert web_tokens.redeem(before_bound, now=issued_at + timedelta(seconds=30, microseconds=-1)).agent_id == agent
    # Over HTTP: one issued five minutes and a moment ago has expired, and is listed so.
    _, expired = factories.web_call_token(actor, agent, now=utcnow() - timedelta(seconds=300, milliseconds=1))
    assert redeem(platform.client, expired) == (401, {"message": REFUSAL, "code": "unauthenticated", "result": None})
    statuses = sorted(t["status"] for t in Api(platform, actor)("GET", "/web-calls/tokens")["webCallTokens"])
    assert statuses == ["active", "expired", "redeemed"]  # the one at its bound was never spent: still active then


def test_unknown_malformed_spent_and_expired_tokens_are_refused_alike(platform):
    actor = platform.workspace()
    agent = factories.agent(actor)
    _, spent = factories.web_call_token(actor, agent)
    assert redeem(platform.client, spent)[0] == 200
    _, expired = factories.web_call_token(actor, agent, now=utcnow() - timedelta(minutes=6))
    _, live = factories.web_call_token(actor, agent)
    invitation = Api(platform, actor)("POST", "/invitations",
                                      json={"email": "g@example.com", "role": "member"})["token"]
    tried = [spent, expired, "vaw_" + "A" * 43, live[:-1], live + "A", live.upper(), "vaw_", "x", invitation,
             actor.secret, live.replace("vaw_", "vai_")]
    answers = {token: redeem(platform.client, token) for token in tried}
    assert all(answer == (401, {"message": REFUSAL, "code": "unauthenticated", "result": None})
               for answer in answers.values()), answers
    assert redeem(platform.client, live)[0] == 200  # none of the near misses spent it
    response = platform.client.post(REDEEM, json={"token": ""})
    assert response.status_code == 400 and "token" in response.json()["data"]["message"]


def test_of_redemptions_at_once_exactly_one_wins(platform):
    actor = platform.workspace()
    agent = factories.agent(actor)
    _, token = factories.web_call_token(actor, agent)
    statuses = run_threads(8, lambda index: redeem(platform.client, token)[0])
    assert sorted(statuses) == [200] + [401] * 7, statuses


@pytest.mark.postgres
@pytest.mark.parametrize("app_database_url", ["postgres"], indirect=True)
@pytest.mark.parametrize("first_commits", [True, False], ids=["committed", "rolled-back"])
def test_a_redemption_in_flight_decides_the_one_that_waits_on_it(platform, first_commits):
    """The second redemption reads the row while the first holds it: it waits for the first's end,
    and is refused if it committed, or wins if it rolled back (the token was not spent)."""
    actor = platform.workspace()
    agent = factories.agent(actor)
    _, token = factories.web_call_token(actor, agent)
    holding, release, outcome = threading.Event(), threading.Event(), {}

    class RolledBack(Exception):
        pass

    def first():
        with session():
            try:
                with database.atomic():
                    outcome["first"] = web_tokens.redeem(token).agent_id
                    holding.set()
                    release.wait(30)
                    if not first_commits:
                        raise RolledBack()
            except RolledBack:
                outcome["first"] = "rolled back"

    def second():
        holding.wait(30)
        with session():
            try:
                outcome["second"] = web_tokens.redeem(token).agent_id
            except web_tokens.WebTokenRefused:
                outcome["second"] = "refused"

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    [t.start() for t in threads]
    holding.wait(30)
    time.sleep(0.3)  # the second is now waiting on the row (it cannot finish before the first does)
    assert "second" not in outcome
    release.set()
    [t.join(30) for t in threads]
    expected = {"first": agent, "second": "refused"} if first_commits else {"first": "rolled back", "second": agent}
    assert outcome == expected


@pytest.mark.parametrize("settings_overrides", [{"anonymous_requests_per_minute": 3}])
def test_redemptions_are_limited_per_client_address_refused_ones_included(platform):
    actor = platform.workspace()
    agent = factories.agent(actor)
    _, token = factories.web_call_token(actor, agent)
    guesser, other = platform.client_at("203.0.113.7"), platform.client_at("203.0.113.8")
    assert [redeem(guesser, f"vaw_{i:043d}")[0] for i in range(3)] == [401, 401, 401]
    response = guesser.post(REDEEM, json={"token": token})
    assert response.status_code == 429 and response.json()["data"]["code"] == "rate_limited"
    assert 1 <= int(response.headers["retry-after"]) <= 60
    # The limit refused it before anything was looked at: the token still works, from elsewhere.
    assert redeem(other, token)[0] == 200


def test_issuing_and_listing_need_calls_web_token(platform):
    api = owner(platform)
    agent = factories.agent(api.actor)
    viewer = Api(platform, platform.member(api.actor, "viewer"))
    assert "calls:web-token" in issue(viewer, 403, agentId=agent)["message"]
    assert "calls:web-token" in viewer("GET", "/web-calls/tokens", 403)["message"]
    member = Api(platform, platform.member(api.actor, "member"))
    assert issue(member, agentId=agent)["webCallToken"]["createdBy"] == member.actor.user_id
    key = Api(platform, platform.key_actor(api.actor, permissions=["calls:read"]))
    assert "calls:web-token" in issue(key, 403, agentId=agent)["message"]


def test_the_redemption_is_audited_in_the_tokens_workspace_without_the_token(platform):
    api = owner(platform)
    agent = factories.agent(api.actor)
    made = issue(api, agentId=agent)
    assert redeem(platform.client, made["token"])[0] == 200
    logs = api("GET", "/workspace/logs")["logs"]
    entry = next(e for e in logs if e["operationId"] == "redeemWebCallToken")
    assert entry["actor"] == {"userId": None, "credentialId": made["webCallToken"]["id"], "kind": "web_call_token"}
    assert entry["changes"] == {"token": "[redacted]"}
    assert made["token"] not in str(logs)


def test_deleting_the_agent_deletes_its_tokens(platform):
    api = owner(platform)
    agent = factories.agent(api.actor)
    token = issue(api, agentId=agent)["token"]
    api("DELETE", f"/agents/{agent}")
    assert api("GET", "/web-calls/tokens")["webCallTokens"] == []
    assert redeem(platform.client, token)[0] == 401


def test_the_list_pages_newest_first(platform):
    api = owner(platform)
    agent = factories.agent(api.actor)
    start = utcnow() - timedelta(seconds=10)
    made = [factories.web_call_token(api.actor, agent, now=start + timedelta(seconds=i))[0] for i in range(3)]
    assert [t["id"] for t in api("GET", "/web-calls/tokens")["webCallTokens"]] == made[::-1]
    page = api("GET", "/web-calls/tokens", limit=2, offset=2)
    assert [t["id"] for t in page["webCallTokens"]] == [made[0]]
    assert page["pagination"] == {"total": 3, "limit": 2, "offset": 2}
    assert api("GET", "/web-calls/tokens", offset=5) == {"webCallTokens": [], "pagination": {"total": 3, "limit": 20,
                                                                                              "offset": 5}}
    assert "limit" in api("GET", "/web-calls/tokens", 400, limit=101)["message"]
