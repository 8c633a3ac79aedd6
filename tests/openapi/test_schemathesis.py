"""Schemathesis over the whole contract against a live server: every phase, every check, fixed seed.

The generated phases (examples, coverage, fuzzing) run once over every operation. The stateful
phase runs once per family of operations that links join (an API key and what acts on it; an
agent, its versions and branches; a call and its tags...), the families read from the contract's
links: a walk over one family follows each of its links within a few steps, where a walk over the
whole contract would spend its steps on the other families, more so with every group added.

The settings, and the reason for each departure from the defaults, are in schemathesis.toml.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from api.contract import operations
from tests.support.servers import ROOT

CONFIG = Path(__file__).with_name("schemathesis.toml")
MIN_WALKS, WALKS_PER_LINK = 20, 3
SEEDS = (42, 43, 44)
# Families whose deepest links sit further: a campaign's claims need it created, given a contact and
# started first, and their outcome, renewal and resolution come after the claim, each step one of
# some twenty rules; a few walks per link rarely chain the five.
# A review's feedback is raised once it is done, and references come after that feedback; a
# solution is decided after an external run is given one; a feedback's fourteen links (archive before
# unarchive, an assignee or a comment before their lists and removal) need more walks than three each.
# A simulation's verdicts and feedback come once a worker has held its conversation, after its
# iterations are listed. A reported call's share links are revoked, shown and their recording served
# once one is made, one of the call's fourteen links. A live call's control requests, and their
# links, come once two moves have put it in progress. A knowledge base's attachment to the prepared
# agent, and the agent's list and detachment after it, come two steps after it is made. The agents'
# family holds some forty links since syncs joined it, a branch's merge three steps deep.
WALKS_PER_LINK_OF = {"createCampaign": 20, "createReview": 20, "createOptimizationRun": 20, "createFeedback": 10,
                     "createSimulation": 10, "receiveEndOfCallReport": 10, "registerLiveCall": 10,
                     "attachAgentKnowledgeBase": 5, "createAgentSync": 5}


def walks_per_link(family: list[str]) -> int:
    """The walks per link of the family holding any operation named above, whichever operation
    the contract's order puts first (a link added elsewhere may join two families)."""
    return max(WALKS_PER_LINK_OF.get(op_id, WALKS_PER_LINK) for op_id in family)


def link_families() -> list[list[str]]:
    """The operation ids joined by links (a link's source and its target in one family), each
    family in contract order; operations without links belong to none."""
    parent: dict[str, str] = {}

    def root(op_id: str) -> str:
        while parent.setdefault(op_id, op_id) != op_id:
            op_id = parent[op_id]
        return op_id

    for op in operations():
        for response in op.spec["responses"].values():
            for link in response.get("links", {}).values():
                parent[root(link["operationId"])] = root(op.operation_id)
    order = [op.operation_id for op in operations()]
    families: dict[str, list[str]] = {}
    for op_id in sorted(parent, key=order.index):
        families.setdefault(root(op_id), []).append(op_id)
    return list(families.values())


def family_links(family: list[str]) -> list[str]:
    ops = {op.operation_id: op for op in operations()}
    return [name for op_id in family for response in ops[op_id].spec["responses"].values()
            for name in response.get("links", {})]


def schemathesis(live_server, env, work: Path, name: str, phases: str, *filters: str) -> tuple[dict, str]:
    report = work / f"{name}.json"
    command = [
        str(Path(sys.executable).with_name("schemathesis")), "--config-file", str(CONFIG),
        "run", f"{live_server.url}/api/v2/openapi.json",
        # Every check runs (schemathesis's default); the file turns one off where it cannot apply.
        "--phases", phases, "--report", "json", "--report-json-path", str(report), *filters,
    ]
    # The working directory takes whatever schemathesis leaves behind. The generated phases over
    # the whole contract take some 10 minutes on a 2-core machine that runs other tests beside them:
    # the bound is there to end a run that hangs, not to time one.
    run = subprocess.run(command, env=env, cwd=work, capture_output=True, text=True, timeout=2400)
    # The server's log holds the traceback behind any 500.
    server_logs = "".join(log.read_text()[-20_000:] for log in work.glob("server-*.log"))
    output = f"[{name}]\n" + run.stdout + run.stderr + "\n--- server log ---\n" + server_logs
    assert run.returncode == 0, output
    summary = json.loads(report.read_text())
    assert summary["complete"] and summary["failures"] == [] and summary["errors"] == [], output
    assert all(phase["status"] in ("success", "skip") for phase in summary["phases"].values()), output
    return summary, output


@pytest.mark.slow  # fuzzes the whole contract for minutes; the authorization matrix and the audit test cover every operation by default
def test_schemathesis_finds_no_failures(conversing_server, tmp_path):
    live_server = conversing_server
    owner = live_server.admin("bootstrap", "--workspace", "w", "--email", "a@example.com")
    caller = prepare_caller(live_server, owner)
    env = {**os.environ, "TEST_API_TOKEN": owner["token"], "TEST_WORKSPACE_ID": owner["workspaceId"],
           "TEST_USER_ID": owner["userId"], "SCHEMATHESIS_HOOKS": "tests.openapi.schemathesis_hooks",
           "PYTHONPATH": str(ROOT), "TEST_AGENT_ID": caller["agentId"],
           "TEST_CALLER_NUMBER_ID": caller["id"], "TEST_CALLER_NUMBER": caller["number"],
           "TEST_CALL_ID": caller["callId"], "TEST_PERSONA_ID": caller["personaId"],
           "TEST_VERSION_ID": caller["versionId"], "TEST_RUNTIME_ID": caller["runtimeId"]}
    # Deleting a workspace is tried on one of its own: renamed to an example by updateWorkspace, the
    # bootstrapped workspace would be deleted by the example confirmName, and every later request fail.
    summary, output = schemathesis(live_server, env, tmp_path, "generated", "examples,coverage,fuzzing",
                                   *(arg for op_id in ON_A_SPARE_WORKSPACE for arg in ("--exclude-operation-id", op_id)))
    spare_summary, _ = schemathesis(live_server, {**env, "TEST_WORKSPACE_ID": spare_workspace(live_server, owner)},
                                    tmp_path, "generated-spare", "examples,coverage,fuzzing",
                                    *(arg for op_id in ON_A_SPARE_WORKSPACE for arg in ("--include-operation-id", op_id)))
    # A clean exit proves little if the requests never got past authorization or creation.
    assert (summary["operations"]["tested"] + spare_summary["operations"]["tested"]
            == len(operations())), output
    # Every operation reached its handler: those without ids in the path answered 2xx to generated
    # requests; those with ids are the target of a link, which the stateful phase follows (below).
    link_targets = {link["operationId"] for op in operations() for response in op.spec["responses"].values()
                    for link in response.get("links", {}).values()}
    for operation in operations():
        if any(p["in"] == "path" for p in operation.parameters):
            assert operation.operation_id in link_targets, f"{operation.operation_id}: no link leads to it"
            continue
        if operation.operation_id in link_targets or operation.operation_id in NEVER_2XX_HERE:
            continue  # reached with what another answer holds (an invitation's token), in the stateful phase
        label = f"{operation.method.upper()} {operation.path}"
        rates = summary["valid_rates"].get(label, {})
        assert sum(phase["accepted"] for phase in rates.values()) > 0, f"{label} never answered 2xx: {rates}"

    families = link_families()
    assert families
    for family in families:
        filters = [arg for op_id in family for arg in ("--include-operation-id", op_id)]
        # Walks in proportion to the links to follow: a few per link reach each one.
        walks = max(MIN_WALKS, walks_per_link(family) * len(family_links(family)))
        clear_capped_resources(live_server, owner, keep=(caller["id"], caller["personaId"]))
        # Runs are made from it and solutions address it (schemathesis_hooks.py).
        family_env = {**env, "TEST_FEEDBACK_ID": open_feedback(live_server, owner, caller["agentId"])}
        if ON_A_SPARE_WORKSPACE & set(family):
            family_env = {**family_env, "TEST_WORKSPACE_ID": spare_workspace(live_server, owner)}
        # A walk's steps depend on the server's answers, which its state and timing change (a name
        # taken, a job finished): Hypothesis, replaying a walk that now draws differently, ends the
        # phase early, or a seed's walks miss a deep link. Another seed then walks again; every
        # walk of every seed must pass its checks, and one seed must follow every link.
        for seed in SEEDS:
            _, output = schemathesis(live_server, family_env, tmp_path, f"stateful-{family[0]}-{seed}", "stateful",
                                     *filters, "--max-examples", str(walks), "--seed", str(seed))
            links = re.search(r"API Links:\s+(\d+) covered / (\d+) selected", output)
            assert links and int(links[2]) > 0, output
            if int(links[1]) == int(links[2]):
                break
        else:
            raise AssertionError(f"no seed of {SEEDS} followed every link:\n{output}")


# What cannot answer 2xx to a caller who is its workspace's only member: leaving (the last owner
# stays; tests/handlers/test_members.py has a member leave).
NEVER_2XX_HERE = {"leaveWorkspace": "the caller is the workspace's last owner",
                  # The walks hold no password, challenge or authenticator: tests/handlers/test_sign_in.py
                  # and test_mfa.py sign in and enrol with them.
                  "signIn": "no user of the walks has a password",
                  "completeSignIn": "no walk is given a sign-in's challenge",
                  "enrolMfaToSignIn": "no walk is given a sign-in's challenge",
                  "confirmMfaToSignIn": "no walk is given a sign-in's challenge",
                  "disableMfa": "no walk has a second factor's code"}

# The number the prepared agent answers and campaigns call from; the walks create +14155550123
# (schemathesis.toml), and a number belongs to one workspace across the service.
CALLER_NUMBER = "+14155550100"


def prepare_caller(live_server, owner) -> dict:
    """An agent (created with version 1 published) answering an inbound and outbound number of the
    workspace: what a campaign calls with and from, and what resolving that number's route finds;
    a call of that agent, recorded from its report, which reviews review; open feedback on the
    agent, which an optimization run starts from; a persona, which simulations call with and
    feedback references name; and the agent's version, which live calls register with. So
    schemathesis.toml can pin their ids and those requests succeed."""
    import httpx
    with httpx.Client(base_url=live_server.url + "/api/v2", headers={"Authorization": f"Bearer {owner['token']}"},
                      params={"workspaceId": owner["workspaceId"]}, timeout=30) as client:
        agent = client.post("/agents", json={"name": "Campaign caller"})
        assert agent.status_code == 200, agent.text
        agent_id = agent.json()["data"]["result"]["agent"]["id"]
        number = client.post("/phone-numbers", json={"number": CALLER_NUMBER, "inboundAgentId": agent_id,
                                                     "capabilities": {"inbound": True, "outbound": True}})
        assert number.status_code == 200, number.text
        resolved = client.get("/inbound-routes/resolve", params={"number": CALLER_NUMBER})
        assert resolved.status_code == 200, resolved.text
        call_id = str(uuid.uuid4())
        # Just ended: a retention the walks set (dataRetentionDays 1) and purge must not take it.
        started = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(minutes=2)
        report = client.post("/webhooks/end-of-call-report", json={
            "type": "end-of-call-report", "callId": call_id, "workspaceId": owner["workspaceId"], "agentId": agent_id,
            "durationMs": 60000, "startedAt": started.isoformat(),
            "endedAt": (started + timedelta(minutes=1)).isoformat(),
            "status": "completed", "summary": "The caller booked a table.", "transcript": "AI: Hello."})
        assert report.status_code == 200, report.text
        persona = client.post("/personas", json={"name": "Prepared caller", "goal": "Book a table"})
        assert persona.status_code == 200, persona.text
        # The version live calls register with.
        versions = client.get(f"/versions/agent/{agent_id}")
        assert versions.status_code == 200, versions.text
        # The runtime integration syncs push to (its host does not resolve here: they fail, retried).
        runtime = client.post("/integrations", json={"kind": "runtime", "name": "Prepared runtime",
                                                     "baseUrl": "https://runtime.example.com/configs",
                                                     "secret": "runtime-secret-0123"})
        assert runtime.status_code == 200, runtime.text
    open_feedback(live_server, owner, agent_id, call_id)
    return {**number.json()["data"]["result"]["phoneNumber"], "agentId": agent_id, "callId": call_id,
            "personaId": persona.json()["data"]["result"]["persona"]["id"],
            "versionId": versions.json()["data"]["result"]["versions"][0]["id"],
            "runtimeId": runtime.json()["data"]["result"]["integration"]["id"]}


def open_feedback(live_server, owner, agent_id: str, call_id: str | None = None) -> str:
    """An open feedback on the prepared agent, its id: what an optimization run takes by default,
    which the walks before may have resolved (a resolved feedback, an accepted solution)."""
    import httpx
    body = {"title": "The agent did not confirm the booking", "agentId": agent_id,
            **({"callId": call_id} if call_id else {})}
    response = httpx.post(live_server.url + "/api/v2/feedbacks", json=body, timeout=30,
                          params={"workspaceId": owner["workspaceId"]},
                          headers={"Authorization": f"Bearer {owner['token']}"})
    assert response.status_code == 200, response.text
    return response.json()["data"]["result"]["feedback"]["id"]


# What may end the workspace that the requests act in: tried in a spare workspace instead.
ON_A_SPARE_WORKSPACE = {"deleteWorkspace"}


def spare_workspace(live_server, owner) -> str:
    import httpx
    response = httpx.post(live_server.url + "/api/v2/workspaces", json={"name": "spare"}, timeout=30,
                          headers={"Authorization": f"Bearer {owner['token']}"})
    assert response.status_code == 200, response.text
    return response.json()["data"]["result"]["workspace"]["id"]


def clear_capped_resources(live_server, owner, keep: tuple[str, ...]) -> None:
    """A workspace holds at most 100 subscriptions, 100 widgets and 50 custom roles, a user owns at most 100
    workspaces and holds 100 unexpired tokens, an email has one pending invitation, and the earlier
    phases may have made them: a walk must be able to create one, to follow the links from it.
    ``keep``: the prepared caller number, which the pinned campaigns call from, and the prepared
    persona, which the pinned feedback references name."""
    import httpx
    with httpx.Client(base_url=live_server.url + "/api/v2", headers={"Authorization": f"Bearer {owner['token']}"},
                      params={"workspaceId": owner["workspaceId"]}, timeout=30) as client:
        while ids := [s["id"] for s in client.get("/webhooks/subscriptions", params={"limit": 100}).json()
                      ["data"]["result"]["subscriptions"]]:
            for subscription_id in ids:
                assert client.delete(f"/webhooks/subscriptions/{subscription_id}").status_code == 200
        # Pending invitations: the walks generate the same few emails again, each already invited.
        while ids := [i["id"] for i in client.get("/invitations", params={"limit": 100, "status": "pending"}).json()
                      ["data"]["result"]["invitations"]]:
            for invitation_id in ids:
                assert client.delete(f"/invitations/{invitation_id}").status_code == 200
        # A phone number is unique across the service and a phone book number per workspace: the walks
        # create the one number the configuration gives (schemathesis.toml), made by an earlier phase.
        # Personas: names unique per workspace, which the walks generate again.
        # Dashboard widgets: at most 100 per workspace, names unique per dashboard.
        for collection, key in (("/phone-numbers", "phoneNumbers"), ("/phone-aliases", "aliases"),
                                ("/personas", "personas"), ("/analytics/widgets", "widgets")):
            while ids := [r["id"] for r in client.get(collection, params={"limit": 100}).json()
                          ["data"]["result"][key] if r["id"] not in keep]:
                for resource_id in ids:
                    assert client.delete(f"{collection}/{resource_id}").status_code == 200
        for role in client.get("/roles", params={"limit": 100}).json()["data"]["result"]["roles"]:
            if not role["builtIn"]:
                assert client.delete(f"/roles/{role['id']}").status_code in (200, 409)
        # A workspace's llm integration takes the place of the platform's endpoint (the local one that
        # answers the walks' chats and simulations): those the earlier phases made, at example
        # addresses that answer nothing here, go.
        while ids := [i["id"] for i in client.get("/integrations", params={"limit": 100, "kind": "llm"}).json()
                      ["data"]["result"]["integrations"]]:
            for integration_id in ids:
                assert client.delete(f"/integrations/{integration_id}").status_code == 200
        # Schedules: names unique per workspace, which the walks generate again. (One a campaign uses stays.)
        while schedules := client.get("/schedules", params={"limit": 100}).json()["data"]["result"]["schedules"]:
            statuses = [client.delete(f"/schedules/{s['id']}").status_code for s in schedules]
            assert set(statuses) <= {200, 409}
            if 200 not in statuses:
                break
    # The caller's own: workspaces and tokens, asked for without a workspace.
    with httpx.Client(base_url=live_server.url + "/api/v2", headers={"Authorization": f"Bearer {owner['token']}"},
                      timeout=30) as client:
        for workspace in client.get("/workspaces", params={"limit": 100}).json()["data"]["result"]["workspaces"]:
            if workspace["id"] != owner["workspaceId"] and workspace["role"] == "owner":
                client.delete("/workspace", params={"workspaceId": workspace["id"], "confirmName": workspace["name"]})
        for token in client.get("/access-tokens", params={"limit": 100}).json()["data"]["result"]["accessTokens"]:
            if not token["current"]:
                assert client.delete(f"/access-tokens/{token['id']}").status_code == 200
