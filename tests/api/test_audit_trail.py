"""Every change made through the API is in the workspace's audit log.

The operations come from the contract: each one whose method is not GET is made to succeed, with
its examples and, for the ids it needs, the operation its contract's links name as their source
(the one that creates what it acts on), then its audit entry is looked up by the request's id.
An operation added to openapi/ is covered without a line here; one that records nothing, or
that this test cannot make succeed, fails it.
"""
from __future__ import annotations

import json
import uuid

import pytest

from api.contract import Operation, operations
from tests.support import factories
from tests.support.factories import sign_in
from tests.support.examples import encoded, example_request, takes_json
from tests.support.webhook_receiver import Receiver

MUTATING = [o for o in operations() if o.method != "get" and o.spec.get("x-audit") != "none"]
# Reads sent as a POST (their query too long for a URL), which write no entry.
READS_BY_POST = [o for o in operations() if o.method != "get" and o.spec.get("x-audit") == "none"]
BY_ID = {o.operation_id: o for o in operations()}


def _sources(target: str) -> list[tuple[Operation, dict]]:
    """(operation, link) of every link in the contract that leads to ``target``."""
    return [(op, link) for op in operations() for response in op.spec["responses"].values()
            for link in (response.get("links") or {}).values() if link["operationId"] == target]


def _pointer(document, pointer: str):
    for part in pointer.strip("/").split("/"):
        document = document[int(part)] if isinstance(document, list) else document[part]
    return document


# The ids the contract's examples use for the caller and its workspace: a body naming them acts on
# the test's own.
EXAMPLE_USER, EXAMPLE_WORKSPACE = "7d5b1c8e-3f57-4c59-9d37-2f4f8a3e6a10", "4f1d2c3b-5a6e-4f70-8a9b-0c1d2e3f4a5b"


def _send(platform, actor, op: Operation, overrides=None, body_fields=None, body=None):
    path, query, example_body = example_request(op, actor.workspace_id, overrides=overrides)
    if body is None and example_body is not None and takes_json(op):
        example_body = json.loads(json.dumps(example_body).replace(EXAMPLE_USER, actor.user_id)
                                  .replace(EXAMPLE_WORKSPACE, actor.workspace_id))
        example_body.update(body_fields or {})
        if op.operation_id in PREPARED_FIELDS:
            example_body.update(PREPARED_FIELDS[op.operation_id](platform, actor))
    content, headers = encoded(op, example_body if body is None else body)
    return platform.client.request(op.method.upper(), "/api/v2" + path, params=query, content=content,
                                   headers={**headers, **actor.headers})


def _linked(platform, actor, op: Operation) -> tuple[dict, dict]:
    """Parameters and body fields for ``op`` from a link's source, run first (its own ids likewise)."""
    needed = {p["name"] for p in op.parameters if p["in"] == "path"}
    if not needed:
        return {}, {}
    for source, link in _sources(op.operation_id):
        names = {name.split(".")[-1]: expression for name, expression in link["parameters"].items()}
        if not needed <= set(names):
            continue
        response = _send(platform, actor, source, *_linked(platform, actor, source))
        assert response.status_code == 200, f"{source.operation_id} (for {op.operation_id}): {response.text}"
        answer = response.json()

        def value(expression):
            if not isinstance(expression, str):
                return expression
            if expression.startswith("$response.body#"):
                return _pointer(answer, expression.split("#", 1)[1])
            return actor.workspace_id if expression == "$request.query.workspaceId" else expression

        return ({name: value(e) for name, e in names.items()},
                {name: value(e) for name, e in (link.get("requestBody") or {}).items()})
    raise AssertionError(f"{op.operation_id}: no link in the contract leads to it with {sorted(needed)}")


def _report_event(platform, actor) -> dict:
    """An end-of-call-report event of a subscription: what redelivery acts on (a ping's cannot be)."""
    platform.client.post("/api/v2/webhooks/subscriptions", params={"workspaceId": actor.workspace_id},
                         headers=actor.headers, json={"url": "https://hooks.example.com/calls",
                                                      "events": ["end-of-call-report"]})
    platform.client.post("/api/v2/webhooks/end-of-call-report", params={"workspaceId": actor.workspace_id},
                         headers=actor.headers, json=factories.report(actor))
    events = platform.client.get("/api/v2/webhooks/events", params={"workspaceId": actor.workspace_id},
                                 headers=actor.headers).json()["data"]["result"]["events"]
    return {"eventId": events[0]["id"]}


def _invitation_token(platform, actor) -> dict:
    r = platform.client.post("/api/v2/invitations", params={"workspaceId": actor.workspace_id}, headers=actor.headers,
                             json={"email": f"new-{uuid.uuid4().hex[:8]}@example.com", "role": "member"})
    return {"token": r.json()["data"]["result"]["token"]}


def _password(platform, actor) -> dict:
    return {"email": actor.email, "password": sign_in.password(actor)}


def _challenge(platform, actor) -> str:
    answer = platform.client.post("/api/v2/auth/sign-in", json=_password(platform, actor))
    return answer.json()["data"]["result"]["challenge"]


def _code_challenge(platform, actor) -> dict:
    secret, _ = sign_in.second_factor(actor)
    return {"challenge": _challenge(platform, actor), "code": sign_in.code(secret)}


def _enrolment_challenge(platform, actor) -> dict:
    sign_in.require_mfa(actor)
    return {"challenge": _challenge(platform, actor)}


def _enrolled_challenge(platform, actor) -> dict:
    body = _enrolment_challenge(platform, actor)
    enrolled = platform.client.post("/api/v2/auth/sign-in/mfa-enrol", json=body)
    return {**body, "code": sign_in.code(enrolled.json()["data"]["result"]["secret"])}


def _enrolled_code(platform, actor) -> dict:
    enrolled = platform.client.post("/api/v2/auth/mfa/enrol", headers=actor.headers)
    return {"code": sign_in.code(enrolled.json()["data"]["result"]["secret"])}


def _confirmed_code(platform, actor) -> dict:
    secret, _ = sign_in.second_factor(actor)
    return {"code": sign_in.code(secret)}


def _campaign_fields(platform, actor) -> dict:
    """Who calls and from which number: an agent and an outbound number of the workspace (made in
    it: the example's ids are no workspace's)."""
    return {"agentId": factories.agent(actor), "callerNumberId": factories.phone_number(actor)}


def _campaign_contact(platform, actor) -> dict:
    campaign_id = factories.campaign(actor, numbers=["+14155550123"])
    contacts = platform.client.get(f"/api/v2/campaign/{campaign_id}/contacts", headers=actor.headers,
                                   params={"workspaceId": actor.workspace_id}).json()["data"]["result"]["contacts"]
    return {"campaignId": campaign_id, "contactId": contacts[0]["id"]}


def _claimed_contact(platform, actor) -> dict:
    """A running campaign with a contact claimed: what the runtime's operations act on."""
    campaign_id, contact_id, attempt_id = factories.claimed_attempt(actor)
    return {"campaignId": campaign_id, "contactId": contact_id, "attemptId": attempt_id}


# What links cannot express: a body value from another answer, a resource made by two steps, or a
# state the operation needs first (a branch with a commit to merge, a tag to remove): the
# operation named runs first, with the same ids and its own example.
PREPARED_FIELDS = {"createCampaign": _campaign_fields}
PREPARED_OVERRIDES = {"redeliverWebhookEvent": _report_event, "deleteCampaignContact": _campaign_contact,
                      "claimCampaignContacts": _claimed_contact,
                      "reportCampaignAttemptOutcome": _claimed_contact, "renewCampaignAttempt": _claimed_contact,
                      "resolveCampaignContact": _claimed_contact}
PREPARED_BODIES = {"acceptInvitation": _invitation_token, "signIn": _password, "completeSignIn": _code_challenge,
                   "enrolMfaToSignIn": _enrolment_challenge, "confirmMfaToSignIn": _enrolled_challenge,
                   "confirmMfa": _enrolled_code, "disableMfa": _confirmed_code}
FIRST = {"mergeBranch": "commitToBranch", "removeCallTag": "addCallTag"}


# Optimization: a run needs an agent with feedback of the workspace; a solution, a run in review.
def _agent_with_feedback(actor) -> tuple[str, str]:
    agent = factories.agent(actor)
    return agent, factories.feedback(actor, agent_id=agent)


def _run_body(platform, actor) -> dict:
    return {"agentId": _agent_with_feedback(actor)[0], "optimizer": "external"}


def _generating_run(platform, actor) -> dict:
    return {"runId": factories.optimization_run(actor, _agent_with_feedback(actor)[0])}


def _run_with_a_solution(platform, actor) -> dict:
    run = factories.optimization_run(actor, _agent_with_feedback(actor)[0])
    factories.run_solutions(actor, run, [factories.proposal(_feedback_of(actor, run))], finish=False)
    return {"runId": run}


def _solution_in_review(platform, actor) -> dict:
    run = factories.optimization_run(actor, _agent_with_feedback(actor)[0])
    return {"solutionId": factories.run_solutions(actor, run, [factories.proposal(_feedback_of(actor, run))])[0]}


def _feedback_of(actor, run_id: str) -> list[str]:
    from models.kernel.db import session
    from models.optimization import runs
    with session():
        return runs.feedback_ids(actor.workspace_id, run_id)


def _solutions_body(platform, actor) -> dict:
    from models.kernel.db import session
    from models.optimization.tables import OptimizationRun
    with session():
        run_id = OptimizationRun.in_workspace(actor.workspace_id, OptimizationRun.id).where(
            OptimizationRun.status == "generating").scalar()
    return {"solutions": [factories.proposal(_feedback_of(actor, run_id))]}


PREPARED_BODIES.update({"createOptimizationRun": _run_body, "addRunSolutions": _solutions_body})
PREPARED_OVERRIDES.update({"deleteOptimizationRun": _generating_run, "addRunSolutions": _generating_run,
                           "finishOptimizationRun": _run_with_a_solution, "acceptSolution": _solution_in_review,
                           "rejectSolution": _solution_in_review})
# Reviews act on a call of the workspace, raising feedback needs a done review, and a feedback's
# references need a feedback (made through the domain: no link of this contract creates one).
def _review_fields(platform, actor) -> dict:
    return {"targetId": factories.call(actor)}


def _done_review(platform, actor) -> dict:
    return {"reviewId": factories.done_review(actor)}


def _feedback(platform, actor) -> dict:
    return {"feedbackId": factories.feedback(actor, call_id=factories.call(actor))}


def _feedback_reference(platform, actor) -> dict:
    feedback_id = factories.feedback(actor, call_id=factories.call(actor))
    return {"feedbackId": feedback_id, "referenceId": factories.feedback_reference(
        actor, feedback_id, "persona", factories.persona(actor))}


def _persona_referenced(platform, actor) -> dict:
    """The example references a persona: one of the workspace's."""
    return {"entityId": factories.persona(actor)}


PREPARED_FIELDS["createReview"] = _review_fields
PREPARED_FIELDS["addFeedbackReference"] = _persona_referenced
# A suite is assigned to an agent of the workspace (the example's id is no workspace's).
PREPARED_FIELDS["assignUnitTestSuite"] = lambda platform, actor: {"entityId": factories.agent(actor)}
PREPARED_OVERRIDES.update(raiseReviewFeedback=_done_review, addFeedbackReference=_feedback,
                          deleteFeedbackReference=_feedback_reference)
# Call access: a token issued for an agent of the workspace, redeemed with no credential (its
# actor is the token); share links of a call of the workspace.
PREPARED_FIELDS["createWebCallToken"] = lambda platform, actor: {"agentId": factories.agent(actor)}
PREPARED_BODIES["redeemWebCallToken"] = lambda platform, actor: {
    "token": factories.web_call_token(actor, factories.agent(actor))[1]}
PREPARED_OVERRIDES.update(createShareLink=lambda platform, actor: {"callId": factories.call(actor)},
                          revokeShareLink=lambda platform, actor: dict(zip(
                              ("callId", "shareLinkId"), _call_with_link(actor))))
TOKEN_ACTORS = {"acceptInvitation", "redeemWebCallToken"}


def _call_with_link(actor) -> tuple[str, str]:
    call_id = factories.call(actor)
    return call_id, factories.share_link(actor, call_id)[0]



# Live calls: a registration names a version of the workspace; a control request needs a call in
# progress, and its acknowledgement a pending request.
def _live_version(platform, actor) -> dict:
    agent = factories.agent(actor)
    return {"entityId": agent, "versionId": factories.live_version(actor, agent)}


def _call_in_progress(platform, actor) -> dict:
    return {"callId": factories.live_call(actor, factories.agent(actor), status="in-progress")}


def _pending_control(platform, actor) -> dict:
    call_id = _call_in_progress(platform, actor)["callId"]
    return {"callId": call_id, "controlId": factories.control(actor, call_id)}


PREPARED_FIELDS["registerLiveCall"] = _live_version
PREPARED_OVERRIDES.update(transferLiveCall=_call_in_progress, resumeLiveCall=_call_in_progress,
                          sendLiveCallMessage=_call_in_progress, acknowledgeLiveCallControl=_pending_control)


# Knowledge bases attached to agents: an agent and a knowledge base of the workspace (no link of the
# contract gives both ids: the agent is the prepared one in schemathesis.toml), attached first to
# be detached.
def _agent_and_knowledge_base(platform, actor) -> dict:
    return {"agentId": factories.agent(actor), "knowledgeBaseId": factories.knowledge_base(actor)}


def _attached(platform, actor) -> dict:
    ids = _agent_and_knowledge_base(platform, actor)
    factories.attachment(actor, ids["agentId"], ids["knowledgeBaseId"])
    return ids


PREPARED_OVERRIDES.update(attachAgentKnowledgeBase=_agent_and_knowledge_base,
                          detachAgentKnowledgeBase=_attached)


def _entries(request_id: str):
    from models.audit.tables import AuditEntry
    from models.kernel.db import session
    with session():
        return list(AuditEntry.select().where(AuditEntry.request_id == request_id).dicts())


@pytest.mark.parametrize("op", MUTATING, ids=[o.operation_id for o in MUTATING])
def test_every_change_is_audited(platform, op):
    owner = platform.workspace()
    # A second owner, so that the first may be demoted, removed or leave.
    from models.identity.accounts import add_member
    from models.kernel.db import session
    with session():
        add_member(workspace_id=owner.workspace_id, email=f"second-{uuid.uuid4().hex[:8]}@example.com", role="owner")
    overrides, body_fields = ((PREPARED_OVERRIDES[op.operation_id](platform, owner), {})
                              if op.operation_id in PREPARED_OVERRIDES else _linked(platform, owner, op))
    if op.operation_id in FIRST:
        first = _send(platform, owner, BY_ID[FIRST[op.operation_id]], overrides)
        assert first.status_code == 200, first.text
    body = None
    if op.operation_id in PREPARED_BODIES:
        body = PREPARED_BODIES[op.operation_id](platform, owner)
    elif op.parameter("confirmName"):
        overrides["confirmName"] = "acme"
    response = _send(platform, owner, op, overrides, body_fields, body)
    assert response.status_code == 200, response.text
    entries = _entries(response.headers["x-request-id"])
    if op.spec.get("x-audit-workspace") == "deleted":
        assert entries == []  # its workspace's log went with it; the server's log has the line
        return
    assert entries, f"{op.operation_id} left no audit entry"
    entry = entries[0]
    assert entry["operation_id"] == op.operation_id and entry["source_address"]
    assert entry["resource_type"] and entry["actor_kind"] in ("access_token", "invitation", "web_call_token",
                                                               "sign_in")
    if op.operation_id not in TOKEN_ACTORS:
        # A sign-in names the user and the token it made (none yet while enrolling).
        made = response.json()["data"]["result"].get("accessToken") or {}
        credential = made.get("id") if op.spec.get("security") == [] else _token_id(owner)
        assert (entry["actor_user_id"], entry["actor_credential_id"]) == (owner.user_id, credential)
    path_ids = [v for k, v in overrides.items() if f"{{{k}}}" in op.path]
    if path_ids:
        assert entry["resource_id"] == str(path_ids[-1])
    text = json.dumps(entry["changes"])
    assert owner.secret not in text and not any(prefix in text for prefix in ("vai_", "vaw_", "vas_", "vsc_", "whsec_"))
    assert sign_in.PASSWORD not in text


def test_attaching_and_detaching_a_knowledge_base_are_audited_with_the_agent_and_retrieval_is_not(platform):
    owner = platform.workspace()
    agent, kb = factories.agent(owner), factories.knowledge_base(owner)
    path = f"/api/v2/agents/{agent}/knowledge-bases/{kb}"
    params = {"workspaceId": owner.workspace_id}
    for method, operation_id in (("PUT", "attachAgentKnowledgeBase"), ("PUT", "attachAgentKnowledgeBase"),
                                 ("DELETE", "detachAgentKnowledgeBase")):
        response = platform.client.request(method, path, params=params, headers=owner.headers)
        assert response.status_code == 200, response.text
        [entry] = _entries(response.headers["x-request-id"])
        assert (entry["operation_id"], entry["resource_type"], entry["resource_id"], entry["workspace"]) == (
            operation_id, "agents/knowledge-bases", kb, owner.workspace_id)
        assert entry["actor_user_id"] == owner.user_id
    # Refused: nothing changed, no entry.
    response = platform.client.delete(path, params=params, headers=owner.headers)
    assert response.status_code == 404 and _entries(response.headers["x-request-id"]) == []
    factories.attachment(owner, agent, kb)
    factories.article(owner, kb)
    for op in READS_BY_POST:
        assert op.operation_id == "retrieveKnowledge"
        response = platform.client.post("/api/v2/knowledge-bases/retrieve", params=params, headers=owner.headers,
                                        json={"agentId": agent, "query": "refund"})
        assert response.status_code == 200 and len(response.json()["data"]["result"]["results"]) == 1
        assert _entries(response.headers["x-request-id"]) == []


def _token_id(actor) -> str:
    from models.identity.tables import AccessToken
    from models.kernel.db import session
    from models.kernel.secrets import digest
    with session():
        return AccessToken.get(AccessToken.token_hash == digest(actor.secret)).id


def test_the_audited_operations_are_every_change_in_the_contract():
    assert {o.operation_id for o in MUTATING} >= {"createApiKey", "deleteApiKeys", "updateMemberRole", "createInvitation",
                                                   "acceptInvitation", "createRole", "grantCredits", "purgeRetention"}
    assert all(o.method in ("post", "put", "patch", "delete") for o in MUTATING)


def _audit_write_fails(monkeypatch):
    from api import audit_trail

    def refuse(**_entry):
        raise RuntimeError("the audit log's table is gone")
    monkeypatch.setattr(audit_trail.audit_log, "record", refuse)


def test_a_change_whose_entry_cannot_be_written_is_not_made(platform, monkeypatch):
    # A change and its entry commit together: no change without its entry.
    owner = platform.workspace("Before")
    params = {"workspaceId": owner.workspace_id}
    key = platform.client.post("/api/v2/api-keys", params=params, headers=owner.headers,
                               json={"name": "k", "userId": owner.user_id})
    assert key.status_code == 200, key.text
    _audit_write_fails(monkeypatch)
    r = platform.client.patch("/api/v2/workspace", params=params, headers=owner.headers, json={"name": "After"})
    assert r.status_code == 500 and "the audit log" not in r.text
    r = platform.client.request("DELETE", "/api/v2/api-keys", params={**params, "ids": key.json()["data"]["result"]["apiKey"]["id"]},
                                headers=owner.headers)
    assert r.status_code == 500
    monkeypatch.undo()
    r = platform.client.get("/api/v2/workspace", params=params, headers=owner.headers)
    assert r.json()["data"]["result"]["workspace"]["name"] == "Before"
    keys = platform.client.get("/api/v2/api-keys", params=params, headers=owner.headers).json()["data"]["result"]
    assert [k["name"] for k in keys["apiKeys"]] == ["k"]


def test_a_purge_commits_in_batches_so_its_entry_follows_and_a_failed_entry_is_only_logged(platform, monkeypatch,
                                                                                          caplog):
    owner = platform.workspace()
    params = {"workspaceId": owner.workspace_id}
    from datetime import timedelta

    from models.kernel.db import utcnow
    old = factories.call(owner, started_at=utcnow() - timedelta(days=40))
    _audit_write_fails(monkeypatch)
    r = platform.client.post("/api/v2/workspace/retention/purge", params=params, headers=owner.headers,
                             json={"olderThanDays": 30})
    assert r.status_code == 200 and r.json()["data"]["result"]["deleted"]["calls"] == 1, r.text
    assert platform.client.get(f"/api/v2/call/{old}", params=params, headers=owner.headers).status_code == 404
    assert "the audit entry of purgeRetention could not be written" in caplog.text


# --- Feedback ------------------------------------------------------------------------------------
# A feedback is about something of the workspace (the example's agent is no workspace's): an agent
# made in it. Every other feedback operation follows the links from createFeedback.

def _feedback_subject(platform, actor) -> dict:
    return {"agentId": factories.agent(actor)}


PREPARED_FIELDS["createFeedback"] = _feedback_subject


# Simulations: of an agent of the workspace; deleting one needs it finished, an external verdict a
# completed conversation, feedback a failed one (a scripted caller the module's endpoint answers, its
# suite's assertion failing); a suite runs against an agent of the workspace.
def _agent_field(platform, actor) -> dict:
    return {"entityId": factories.agent(actor)}


def _finished_simulation(platform, actor) -> dict:
    from models.kernel.db import session
    from models.simulations import simulations
    simulation_id = factories.simulation(actor, factories.agent(actor))
    with session():
        simulations.cancel(workspace_id=actor.workspace_id, simulation_id=simulation_id)
    return {"simulationId": simulation_id}


def _conversation(platform, actor, *, failing: bool) -> dict:
    from models.kernel.db import session
    from models.simulations import iterations
    agent = factories.agent(actor)
    suite = factories.suite(actor)
    factories.assertion(actor, suite, "contains", text="refund" if failing else "help")
    simulation_id = factories.simulation(actor, agent, suite_ids=[suite])
    factories.simulate()
    with session():
        page = iterations.list_iterations(workspace_id=actor.workspace_id, simulation_id=simulation_id, limit=1,
                                          offset=0)
    assert page.items[0].status == "completed", page.items[0]
    return {"simulationId": simulation_id, "iterationId": page.items[0].id}


PREPARED_FIELDS.update({"createSimulation": _agent_field, "runSuite": _agent_field})
# A sync names a runtime integration of the workspace (the example's id is no workspace's).
PREPARED_FIELDS.update({op: lambda platform, actor: {"integrationId": factories.runtime(actor)}
                        for op in ("createAgentSync", "createWorkflowSync")})
PREPARED_OVERRIDES.update({
    "deleteSimulation": _finished_simulation,
    "postSimulationVerdicts": lambda platform, actor: _conversation(platform, actor, failing=False),
    "raiseSimulationFeedback": lambda platform, actor: _conversation(platform, actor, failing=True)})


# --- Chat ----------------------------------------------------------------------------------------
# Sending a chat message asks the chat-completions endpoint (and writes its entry after its own
# transaction, x-audit-transaction: own): a local one answers every request of this file.
@pytest.fixture
def settings_overrides(llm):
    llm.respond(lambda body: "Chez Test, how can I help?")
    # Knowledge documents are fetched from a local server (below): http and loopback allowed.
    return {"llm_base_url": llm.base_url, "webhook_allow_http": True, "webhook_allow_private_addresses": True}


# --- Knowledge documents ---------------------------------------------------------------------------
# Fetched from a local server that answers every GET with a short text (x-audit-transaction: own).
_document_server: Receiver | None = None


def _document_url(platform, actor) -> dict:
    global _document_server
    if _document_server is None:
        _document_server = Receiver()  # a daemon thread, for the rest of the run
    return {"url": f"http://127.0.0.1:{_document_server.server.server_address[1]}/refunds.txt"}


def _fetched_document(platform, actor) -> dict:
    kb = factories.knowledge_base(actor)
    response = platform.client.post(f"/api/v2/knowledge-bases/{kb}/documents/sync",
                                    json=_document_url(platform, actor), params={"workspaceId": actor.workspace_id},
                                    headers=actor.headers)
    assert response.status_code == 200, response.text
    return {"knowledgeBaseId": kb, "documentId": response.json()["data"]["result"]["document"]["id"]}


PREPARED_BODIES["syncDocumentFromUrl"] = _document_url
PREPARED_OVERRIDES["resyncDocument"] = _fetched_document
