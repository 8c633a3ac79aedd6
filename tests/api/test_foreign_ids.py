"""An id of another workspace, named in a body or a query, resolves to nothing: it brings none of that
workspace's data back, then or later, and changes nothing of it.

The fields are found in the contract (every parameter and body field that holds an id), so an
operation added to openapi/ is tried here without a line of its own; ``ID_KINDS`` says which kind of
resource each name refers to, and a name it does not know fails the first test, naming it.
Workspace A holds one resource of each kind, every name carrying a marker; workspace B, holding the
same kinds, sends each operation with A's id in each id field in turn, then reads every list and
resource it has. No answer may carry A's marker, or an id of A that B did not send itself; and A's
resources read the same afterwards.
"""
from __future__ import annotations

import json

import pytest
import yaml

from api.contract import SPEC_DIR, Operation, operations
from tests.support import factories
from tests.support.examples import encoded, example_request

OPERATIONS = operations()

# The resource kind each id-holding field or parameter names, by its name.
ID_KINDS = {
    "agentId": "agent", "workflowId": "workflow", "entityId": "agent", "versionId": "version",
    "baseVersionId": "version", "against": "version", "branchId": "branch", "callId": "call",
    "subscriptionId": "subscription", "eventId": "event", "insightId": "field", "insightIds": "field",
    "structuredDataIds": "field", "userId": "user", "actorUserId": "user", "roleId": "role", "role": "role",
    "invitationId": "invitation", "apiKeyId": "apiKey", "ids": "apiKey", "credentialId": "apiKey",
    "tokenId": "token", "workspaceId": "workspace", "resourceId": "any",
    "suppressionId": "suppression", "scheduleId": "schedule",
    "campaignId": "campaign", "contactId": "contact", "callerNumberId": "phoneNumber", "attemptId": "attempt",
    "phoneNumberId": "phoneNumber", "inboundAgentId": "agent", "inboundWorkflowId": "workflow",
    "afterHoursAgentId": "agent", "afterHoursWorkflowId": "workflow", "aliasId": "alias",
    # Optimization runs and solutions.
    "runId": "run", "solutionId": "solution", "feedbackIds": "feedback",
    # Feedback references and reviews.
    "referenceId": "reference", "reviewId": "review", "targetId": "call",
    # Personas.
    "personaId": "persona",
}
# Feedback: the feedback, its comments, and a member it is assigned to (a filter).
ID_KINDS.update({"feedbackId": "feedback", "commentId": "comment", "assigneeId": "user"})
# Chat: a session with an agent.
ID_KINDS.update({"sessionId": "chatSession"})
# Simulations: a simulation (the one a re-run compares with too), its iterations, the personas it calls with
# and the suites that judge it.
ID_KINDS.update({"simulationId": "simulation", "baselineId": "simulation", "iterationId": "iteration",
                 "personaIds": "persona", "suiteIds": "suite", "suiteId": "suite", "assertionId": "assertion"})
# Call access: a share link of a call (a path parameter, which the reads fill in).
ID_KINDS.update({"shareLinkId": "shareLink"})
# Dashboards: a widget, and the structured-data field a widget of structured data charts.
ID_KINDS.update({"widgetId": "widget", "fieldId": "field"})
# Exports: a whole-workspace export.
ID_KINDS.update({"exportId": "export"})
# Integrations: a workspace's third-party credential.
ID_KINDS.update({"integrationId": "integration"})
# The audio library: a workspace's audio file.
ID_KINDS.update({"audioId": "audio"})
# Syncs: an agent's configuration pushed to a runtime integration.
ID_KINDS.update({"syncId": "sync"})
# Knowledge: a knowledge base with an article, attached to the agent, which retrieval for the agent
# searches (retrieve's agentId; the path ids of the agent's list, attach and detach).
ID_KINDS.update({"knowledgeBaseId": "knowledgeBase", "articleId": "article"})
# Names that hold no id of a workspace's resource: an operation of the contract, a speech
# provider's voice, the name of a kind of resource (the audit log's filter).
NOT_OURS = {"operationId", "voiceId", "resourceType"}
# A message of a call, as the call's runtime names it: kept as given, like the call it belongs to.
NOT_OURS |= {"messageId"}

_SHARED = yaml.safe_load((SPEC_DIR / "components" / "schemas.yaml").read_text())
ID_SCHEMAS = [_SHARED["Id"], _SHARED["Uuid"]]


def _holds_ids(name: str, schema: dict) -> bool:
    items = schema.get("items") if schema.get("type") == "array" else None
    return (name.endswith(("Id", "Ids")) or name == "ids" or schema.get("format") == "uuid"
            or any(schema == shared or items == shared for shared in ID_SCHEMAS)
            or (items or {}).get("format") == "uuid")


def _body_fields(schema: dict, path: tuple = ()):
    """(path, schema) of each field of a body schema that holds an id; a path step "[]" is each item."""
    if not isinstance(schema, dict):
        return
    for key in ("allOf", "oneOf", "anyOf"):
        for part in schema.get(key, ()):
            yield from _body_fields(part, path)
    for name, field in (schema.get("properties") or {}).items():
        if _holds_ids(name, field):
            yield (*path, name), field
        yield from _body_fields(field, (*path, name))
        if field.get("type") == "array":
            yield from _body_fields(field.get("items") or {}, (*path, name, "[]"))


def id_fields(op: Operation) -> list[tuple[str, tuple, dict]]:
    """("query", (name,), schema) and ("body", path, schema) of each id the operation takes but
    its path's (which tests/handlers' cross-workspace tests cover) and workspaceId in the query
    (the workspace the request acts in, checked by the authorization)."""
    found = [("query", (p["name"],), p.get("schema", {})) for p in op.parameters
             if p["in"] == "query" and p["name"] != "workspaceId" and _holds_ids(p["name"], p.get("schema", {}))]
    content = op.spec.get("requestBody", {}).get("content", {}).get("application/json")
    if content:
        seen = set()
        for path, schema in _body_fields(content["schema"]):
            if path not in seen:
                seen.add(path)
                found.append(("body", path, schema))
    return found


FIELDS = [(op, where, path, schema) for op in OPERATIONS for where, path, schema in id_fields(op)
          if path[-1] not in NOT_OURS]


def test_every_id_the_contract_takes_is_of_a_known_kind():
    found = {path[-1] for op in OPERATIONS for _, path, _ in id_fields(op)}
    assert {"agentId", "callId", "baseVersionId", "against", "ids"} <= found, found
    unknown = sorted(found - set(ID_KINDS) - NOT_OURS)
    assert unknown == [], f"say in ID_KINDS which kind of resource these name: {unknown}"


@pytest.fixture
def settings_overrides(llm):
    """A language model endpoint, so that a simulation or a chat message with a foreign id gets past
    the check that one is configured, to the ids."""
    llm.respond(lambda body: "Hello.")
    return {"llm_base_url": llm.base_url}


# --- two workspaces, one resource of each kind ---------------------------------------------------

class World:
    """A workspace with one resource of each kind, each name carrying ``marker``."""

    def __init__(self, platform, marker: str):
        self.platform, self.marker = platform, marker
        self.owner = platform.workspace(marker)
        owner = self.owner
        agent = factories.agent(owner, name=f"{marker} agent")
        factories.save_versions(owner, agent, 2)
        self.subscription = factories.webhook_subscription(owner, f"https://{marker}.example.com/calls")[0]
        self.ids = {"workspace": owner.workspace_id, "user": owner.user_id, "agent": agent,
                    "workflow": factories.workflow(owner, [agent], name=f"{marker} workflow"),
                    "field": factories.insight(owner, name=f"{marker}_score", agents=[agent]),
                    "subscription": self.subscription,
                    "call": factories.call(owner, agent_id=agent, summary=f"{marker} summary",
                                           transcript=f"AI: {marker} hello", tags=[f"{marker}-tag"])}
        self.ids["version"] = self.get(f"/versions/agent/{agent}")["versions"][0]["id"]
        self.ids["branch"] = self.post(f"/branches/agent/{agent}", {"name": f"{marker} branch",
                                                                   "baseVersionId": self.ids["version"]})["branch"]["id"]
        self.ids["event"] = self.get("/webhooks/events")["events"][0]["id"]
        self.ids["role"] = self.post("/roles", {"name": f"{marker} role", "permissions": ["calls:read"]})["role"]["id"]
        self.ids["invitation"] = self.post("/invitations", {"email": f"{marker}@example.com",
                                                            "role": "member"})["invitation"]["id"]
        self.ids["apiKey"] = platform.create_key(owner, name=f"{marker} key")["apiKey"]["id"]
        self.ids["token"] = self.post("/access-tokens", {"name": f"{marker} token"}, workspace=False)["accessToken"]["id"]
        self.post("/webhooks/signing-secrets", {})
        self.ids["phoneNumber"] = factories.phone_number(owner, label=f"{marker} line",
                                                         target=("agent", agent))
        self.ids["alias"] = factories.phone_alias(owner, f"{marker} contact", "+14155550123")
        self.member = factories.member(owner, "member")
        self.ids["suppression"] = factories.suppressed(owner, "+14155550123", reason=f"{marker} reason")[0]
        self.ids["schedule"] = factories.schedule(owner, name=f"{marker} schedule")
        campaign = factories.campaign_row(owner, name=f"{marker} campaign", agent_id=agent)
        self.ids["campaign"], self.ids["contact"], self.ids["attempt"] = factories.claimed_attempt(owner, campaign)
        # Feedback on the call, assigned to the member, with a comment.
        self.ids["feedback"] = factories.feedback(owner, f"{marker} feedback", call_id=self.ids["call"],
                                                  description=f"{marker} description")
        factories.assignee(owner, self.ids["feedback"], self.member.user_id)
        self.ids["comment"] = factories.comment(owner, self.ids["feedback"], f"{marker} comment")
        # Optimization: a run of an external optimizer in review, with one solution for a feedback.
        self.ids.setdefault("feedback", factories.feedback(owner, f"{marker} feedback", agent_id=agent))
        self.ids["run"] = factories.optimization_run(owner, agent, [self.ids["feedback"]])
        self.ids["solution"] = factories.run_solutions(owner, self.ids["run"], [factories.proposal(
            [self.ids["feedback"]], title=f"{marker} solution", new_value=f"You are the {marker} agent.")])[0]
        # Feedback references and reviews: a review of the call, assigned, done, its feedback raised
        # (which references the review), and a reference added by hand.
        review = factories.done_review(owner, call_id=self.ids["call"], title=f"{marker} review")
        self.post(f"/reviews/{review}/assignees", {"userId": self.member.user_id})
        raised = self.post(f"/reviews/{review}/feedback", {"title": f"{marker} feedback"})["feedback"]["id"]
        self.ids["review"] = review
        self.ids.setdefault("feedback", raised)
        # A persona, which a reference by hand names.
        self.ids["persona"] = factories.persona(owner, f"{marker} persona", goal=f"The {marker} goal.",
                                                facts={"secret": f"{marker} fact"})
        self.ids["reference"] = factories.feedback_reference(owner, self.ids["feedback"], "persona",
                                                             self.ids["persona"], label=f"{marker} reference")
        # A chat session with the agent, its messages carrying the marker.
        self.ids["chatSession"] = factories.chat_session(owner, agent)
        factories.chat_messages(owner, self.ids["chatSession"], 2, text=f"{marker} message")
        # A suite on the agent with one assertion; a simulation of the agent with the persona, which
        # the suite judges, and its first iteration.
        self.ids["suite"] = factories.suite(owner, f"{marker} suite", description=f"The {marker} suite.")
        self.ids["assertion"] = factories.assertion(owner, self.ids["suite"], "contains", name=f"{marker} check",
                                                    text=f"{marker} text")
        factories.assignment(owner, self.ids["suite"], "agent", agent)
        self.ids["simulation"] = factories.simulation(owner, agent, name=f"{marker} simulation",
                                                      persona_ids=[self.ids["persona"]])
        self.ids["iteration"] = self.get(f"/simulations/{self.ids['simulation']}/iterations")["iterations"][0]["id"]
        # A live call of the agent, in progress, with a message sent to it and a move whose reason carries the marker.
        live = factories.live_call(owner, agent, status="forwarding")
        self.post(f"/call/{live}/status", {"status": "in-progress", "reason": f"{marker} reason"})
        factories.control(owner, live, "message", {"role": "system", "content": f"{marker} message"})
        # Call access: a web-call token for the agent, and a share link of the call.
        self.ids["webCallToken"] = factories.web_call_token(owner, agent)[0]
        self.ids["shareLink"] = factories.share_link(owner, self.ids["call"])[0]
        # A dashboard widget of the agent's calls.
        self.ids["widget"] = factories.widget(owner, f"{marker} widget", filters={"agentId": agent}, group_by="agent")
        # A whole-workspace export, queued.
        self.ids["export"] = factories.export(owner)
        # An integration, its name and its secret marked.
        self.ids["integration"] = factories.integration(owner, name=f"{marker} integration",
                                                        secret=f"{marker}-integration-secret")
        # An audio file of the library.
        self.ids["audio"] = factories.audio_file(owner, name=f"{marker} audio")
        # Its transcription, requested (queued: no worker runs here).
        factories.audio_transcription(owner, self.ids["audio"])
        # A sync of the agent to a runtime integration, its name marked.
        self.ids["sync"] = factories.sync(owner, agent, factories.runtime(owner, name=f"{marker} runtime"))
        # A knowledge base with an article, the marker in each, attached to the agent.
        self.ids["knowledgeBase"] = factories.knowledge_base(owner, name=f"{marker} knowledge",
                                                             description=f"The {marker} articles.")
        self.ids["article"] = factories.article(owner, self.ids["knowledgeBase"], f"{marker} refunds",
                                                f"Refunds of the {marker} shop take five days.")
        factories.attachment(owner, agent, self.ids["knowledgeBase"])

    def request(self, method: str, path: str, *, query=None, body=None, raw: bytes | None = None, headers=None):
        content, content_headers = (raw, {"Content-Type": "application/json"}) if raw is not None else \
            (json.dumps(body).encode(), {"Content-Type": "application/json"}) if body is not None else (None, {})
        return self.platform.client.request(method, "/api/v2" + path, params=query, content=content,
                                            headers={**self.owner.headers, **content_headers, **(headers or {})})

    def get(self, path: str, **query):
        response = self.request("GET", path, query={"workspaceId": self.owner.workspace_id, **query})
        assert response.status_code == 200, response.text
        return response.json()["data"]["result"]

    def post(self, path: str, body: dict, workspace: bool = True):
        response = self.request("POST", path, body=body,
                                query={"workspaceId": self.owner.workspace_id} if workspace else None)
        assert response.status_code == 200, response.text
        return response.json()["data"]["result"]

    def path_ids(self) -> dict[str, str]:
        """Each path parameter's value for this workspace's own resources."""
        kinds = {**ID_KINDS, "userId": "member"}
        ids = {**self.ids, "member": self.member.user_id}
        return {"entityType": "agent", **{name: str(ids[kind]) for name, kind in kinds.items()
                                          if kind in ids}}

    def leaked(self, text: str, sent: set[str] = frozenset()) -> list[str]:
        """What of this workspace ``text`` shows: its marker, and its ids but those in ``sent``."""
        found = [self.marker] if self.marker in text.lower() else []
        return found + [f"{kind} id" for kind, value in self.ids.items()
                        if str(value) not in sent and isinstance(value, str) and value in text]


def _overrides(op: Operation, world: World) -> dict:
    return {name: value for name, value in world.path_ids().items() if op.parameter(name)
            and op.parameter(name)["in"] == "path"}


def _with(body, path: tuple, value):
    """``body`` with the field at ``path`` (through every item at a "[]") set to ``value``."""
    if not path:
        return value
    if path[0] == "[]":
        return [_with(item, path[1:], value) for item in body] if isinstance(body, list) else body
    body = dict(body) if isinstance(body, dict) else {}
    body[path[0]] = _with(body.get(path[0], [{}] if path[1:2] == ("[]",) else {}), path[1:], value)
    return body


def _foreign(schema: dict, value):
    return [value] if schema.get("type") == "array" else value


def _read_everything(world: World) -> dict[str, str]:
    """Every GET of the contract, for the world's own resources: operation id -> the answer's text."""
    answers = {}
    for op in OPERATIONS:
        if op.method != "get":
            continue
        path, query, _ = example_request(op, world.owner.workspace_id, overrides=_overrides(op, world))
        query = {name: value for name, value in query.items() if (p := op.parameter(name)) and
                 (p.get("required") or name == "workspaceId")}
        answers[op.operation_id] = world.request("GET", path, query=query).text
    return answers


def _stable(answers: dict[str, str]) -> dict[str, object]:
    """The answers less what reading changes by itself: the credentials' last use, a default time
    range ending now, when the answer was made."""
    def strip(node):
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in ("lastUsedAt", "start", "end", "generatedAt")}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node
    kept = {}
    for operation_id, text in answers.items():
        if operation_id in ("listAuditLogs", "exportCalls", "getCallRecording"):
            continue
        try:
            kept[operation_id] = strip(json.loads(text))
        except ValueError:
            kept[operation_id] = text
    return kept


def test_a_foreign_id_in_any_body_or_query_brings_nothing_of_its_workspace(platform):
    a, b = World(platform, "alphasecret"), World(platform, "bravo")
    before = _stable(_read_everything(a))
    problems = []
    for op, where, path, schema in FIELDS:
        url, query, body = example_request(op, b.owner.workspace_id, largest_body=True, overrides=_overrides(op, b))
        kind = ID_KINDS[path[-1]]
        # An entityId beside an entityType names that kind (a feedback's reference to a persona).
        if path[-1] == "entityId" and isinstance(body, dict) and body.get("entityType") in a.ids:
            kind = body["entityType"]
        foreign = a.ids["call" if kind == "any" else kind]
        if isinstance(body, dict) and "workspaceId" in body:
            body = {**body, "workspaceId": b.owner.workspace_id}
        if where == "query":
            value = _foreign(schema, str(foreign))
            query = {**query, path[0]: ",".join(value) if isinstance(value, list) else value}
        else:
            body = _with(body, path, _foreign(schema, foreign))
        content, headers = encoded(op, body)
        response = b.request(op.method.upper(), url, query=query, raw=content, headers=headers)
        name = f"{op.operation_id} {where} {'.'.join(path)}"
        if response.status_code >= 500:
            problems.append(f"{name}: {response.status_code}")
        if leaks := a.leaked(response.text, sent={str(foreign)}):
            problems.append(f"{name} answered with A's {', '.join(leaks)}: {response.text[:200]}")
    # What B stored with A's ids in it (a report naming A's agent) must show nothing of A later.
    for operation_id, text in _read_everything(b).items():
        if leaks := a.leaked(text, sent=set(map(str, a.ids.values()))):
            problems.append(f"then {operation_id} showed A's {', '.join(leaks)}: {text[:200]}")
    assert problems == []
    after = _stable(_read_everything(a))
    changed = {name: (before[name], after[name]) for name in before if before[name] != after[name]}
    assert changed == {}, "a foreign id changed the workspace it names"
