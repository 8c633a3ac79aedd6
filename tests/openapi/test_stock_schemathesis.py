"""Schemathesis as a user's CI runs it against the served document: the stock command line, every
check and every phase, with nothing but a credential and the workspace to act in (a configuration
file holding only that), no hooks and no per-operation settings (tests/openapi/test_schemathesis.py
is the suite's own, thorough run).

The credential is what such a CI would hold: an API key of the workspace's owner with every
permission but deleting the workspace, which a generated request would otherwise do the moment it
repeats the workspace's name, ending the run's access for every later request.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from api.contract import operations

MAX_EXAMPLES = 10
SEED = 42

# Operations whose schema-valid requests the service refuses with 400 by a rule that OpenAPI 3.0
# cannot state and that the product defines as a validation error, so that a stock run reports them
# (ST202, "schema-valid request rejected"); each with the rule. Nothing else may fail, and no run
# may error.
REFUSED_BY_RULES_NO_SCHEMA_STATES = {
    "POST /api-keys": "expiresAt in the future and at most 365 days ahead (a rule of the clock); "
                      "userId a member of the workspace",
    "GET /analytics/structured-data": "structuredDataIds name fields of the workspace",
    "PUT /call/{callId}/structured-data": "structuredData names fields of the workspace, each value of its "
                                          "field's type",
    "GET /call": "startedBefore later than startedAfter (a rule between two parameters)",
    "GET /call/export": "startedBefore later than startedAfter (a rule between two parameters)",
    "DELETE /call/{callId}/tags": "the query's callId equals the path's",
    "POST /agents": "no control characters in the keys of free-form objects (metadata, a tool's parameters)",
    "PATCH /agents/{agentId}": "no control characters in the keys of free-form objects",
    "POST /workflows": "a workflow's graph: edges between its own nodes, one start node; free-form keys",
    "PATCH /workflows/{workflowId}": "a workflow's graph: edges between its own nodes, one start node; free-form keys",
    "POST /branches/{entityType}/{entityId}": "baseVersionId names a version of the entity",
    "POST /branches/{entityType}/{entityId}/{branchId}/commits": "a configuration whose schema depends on entityType",
    "POST /branches/{entityType}/{entityId}/{branchId}/merge": "no control characters in the keys of resolutions",
    "GET /versions/{entityType}/{entityId}/{versionId}/diff": "`against` names a version of the entity",
    "POST /insights": "enumValues only for fields of type enum",
    "PATCH /insights/{insightId}": "enumValues only for fields of type enum (the stored type, if not given)",
    "PATCH /workspace": "settings.timeZone names a zone of the IANA database (a list of about 600 names "
                        "that generated Python clients cannot take as an enum: GMT+0 and GMT-0 collide)",
    "POST /invitations": "role names a built-in role or a custom role of the workspace",
    "POST /invitations/accept": "token names a pending invitation (410 once it was accepted)",
    "POST /webhooks/end-of-call-report": "the report's workspaceId equals the query's; durationMs agrees with "
                                         "endedAt - startedAt and neither passes MAX_CALL_DURATION_S (rules "
                                         "between two fields, and of a setting)",
    "POST /webhooks/subscriptions": "url: a host of valid labels that resolves to public addresses only",
    "PATCH /webhooks/subscriptions/{subscriptionId}": "url: a host of valid labels that resolves to public "
                                                      "addresses only",
    "GET /suppressions/check": "number: a valid number of a numbering plan (libphonenumber's)",
    "POST /suppressions": "expiresAt within the years 1 to 9999 once in UTC (a bad number is reported per item)",
    "POST /schedules": "timeZone names a zone of the IANA database; a day's windows end after they start "
                       "and do not overlap; one exception per date",
    "PATCH /schedules/{scheduleId}": "timeZone names a zone of the IANA database; a day's windows end after "
                                     "they start and do not overlap; one exception per date",
    "GET /inbound-routes/resolve": "number: a valid number of a numbering plan; at: an ISO 8601 date-time "
                                   "with an offset",
    "POST /phone-numbers": "number: a number of a numbering plan (libphonenumber's), region one that has one; "
                           "inboundAgentId or inboundWorkflowId an agent or workflow of the workspace",
    "POST /phone-numbers/import": "a CSV whose header names a number column",
    "PUT /phone-numbers/{phoneNumberId}/routing": "an agent, workflow or schedule of the workspace; an after-hours "
                                                  "target only with a schedule",
    "POST /phone-aliases": "number: a number of a numbering plan; a name not only spaces",
    "PATCH /phone-aliases/{aliasId}": "number: a number of a numbering plan; a name not only spaces",
    "POST /campaign": "agentId or workflowId (one), an agent or workflow of the workspace; callerNumberId a number "
                      "of the workspace; scheduleId or callingHours, not both; endsAt in the future, after startsAt",
    "POST /campaign/{campaignId}/contacts": "a contact's variables: names of one line without control characters "
                                            "(free-form keys, which OpenAPI 3.0 cannot constrain)",
    "POST /campaign/{campaignId}/contacts/import": "a CSV whose header names a number column",
    "POST /campaign/{campaignId}/attempts/{attemptId}/outcome": "retry only with the outcomes that may be tried "
                                                                "again (a rule between two fields)",
    # schemathesis files a failure inside a stateful scenario under this name; the scenarios chain
    # the operations above, and meet the same rules.
    "Stateful tests": "any of the rules above, met in a chain of linked operations",
    "POST /feedbacks": "callId, agentId or workflowId names one of the workspace's; messageId only with callId; a "
                       "status of the workspace's; a title not of spaces only",
    "GET /feedbacks": "status names the workspace's statuses; until later than since; severity or minSeverity, "
                      "not both",
    "PUT /feedback-statuses": "names given once, at least one resolved and one not, none held by feedback removed",
    "POST /reviews": "targetId names a call of the workspace; criteria named once without regard to case, max "
                     "above min",
    "GET /reviews": "until later than since",
    "PATCH /reviews/{reviewId}": "scores name criteria of the review's rubric, each within its range",
    "GET /solutions/runs": "filters: base64 of a JSON object with known keys of the documented types",
    "POST /solutions/runs/{runId}/solutions": "each change names a path of the agent's configuration, changes it "
                                              "and keeps it valid; feedbackIds of the run",
    "POST /solutions/runs/{runId}/finish": "error, when given, not of spaces only",
    "POST /solutions/{solutionId}/accept": "note, when given, not of spaces only",
    "POST /solutions/{solutionId}/reject": "note, when given, not of spaces only",
}
REFUSED_BY_RULES_NO_SCHEMA_STATES.update({
    "POST /unit-tests/suites": "a name or description not of spaces only",
    "PATCH /unit-tests/suites/{suiteId}": "a name or description not of spaces only",
    "GET /unit-tests/suites": "entityType and entityId together (a rule between two parameters)",
    "POST /unit-tests/suites/{suiteId}/assertions": "the kind's own parameters: exactly one of text and pattern, of "
                                                    "equals and exists, none of another kind; a pattern that compiles "
                                                    "within its bounds; a name, text or rubric not of spaces only",
    "PATCH /unit-tests/suites/{suiteId}/assertions/{assertionId}": "the rules of a new assertion, for the "
                                                                   "parameters merged or the new kind's",
    "POST /personas": "a name or goal not of spaces only; traits, constraints and fact names each given once "
                      "without regard to case",
    "PATCH /personas/{personaId}": "the rules of a new persona, for the fields given",
    "POST /simulations": "personaIds or script, not both; personas and scenarios named once; no scenario for a "
                         "script; at most 500 conversations in all; an agent or workflow, personas and suites of "
                         "the workspace",
    "GET /simulations": "entityType and entityId together (a rule between two parameters)",
    "POST /simulations/{simulationId}/iterations/{iterationId}/verdicts": "verdict names once per post; an evaluator "
                                                                         "other than engine; a completed iteration",
})
REFUSED_BY_RULES_NO_SCHEMA_STATES.update({
    "GET /call/cdr": "until later than since (a rule between two parameters)",
    "POST /call/import": "a CSV whose header names the callId, startedAt and endedAt columns and no other",
})
# Live calls: what a registration names must be the workspace's, and what a request to a call
# carries must be a real number or agent; a move's time follows the clock and the call's moves.
REFUSED_BY_RULES_NO_SCHEMA_STATES.update({
    "POST /call/live": "versionId a version of the agent or workflow named, of the workspace; from and to numbers "
                       "of a numbering plan; campaignId and contactId of the workspace, contactId with campaignId",
    "POST /call/{callId}/status": "at not before the call's current status began nor past the clock's skew",
    "POST /call/{callId}/transfer": "a number of a numbering plan, or an agent of the workspace",
    "POST /call/{callId}/messages": "content not of spaces only",
    "POST /call/{callId}/controls/{controlId}/ack": "error with state failed only; error not of spaces only",
})
# Call metrics and dashboard widgets: the ranges' bound, and a widget's fields by its source.
REFUSED_BY_RULES_NO_SCHEMA_STATES.update({
    "GET /call/metrics": "until later than since; at most 10,000 buckets (grouped: buckets times agents)",
    "POST /analytics/widgets": "metric for a widget of calls, fieldId and aggregation (a field of the workspace) "
                               "for one of structured data; filters.agentId an agent of the workspace; x + w at "
                               "most 12; a range of at most 10,000 buckets; a name not of spaces only",
    "PATCH /analytics/widgets/{widgetId}": "the rules of a new widget, for the fields merged",
    "GET /analytics/widgets/{widgetId}/data": "grouped by agent, at most 10,000 buckets in all",
})
# Integrations, the audio library and speech customisation: what a pattern cannot state.
REFUSED_BY_RULES_NO_SCHEMA_STATES.update({
    "POST /integrations": "baseUrl: a host of valid labels that resolves to public addresses only; the fields "
                          "its kind needs",
    "PATCH /integrations/{integrationId}": "baseUrl: a host of valid labels that resolves to public addresses only",
    "POST /audio": "a file of audio a decoder reads (not empty)",
    "POST /custom/abbreviations": "spoken forms with a letter or digit (of any script) once trimmed",
    "PATCH /custom/abbreviations/{abbreviationId}": "spoken forms with a letter or digit (of any script) once trimmed",
    "POST /speech-filter/preview": "phoneRegion a region with a numbering plan (libphonenumber's); words with a "
                                   "letter or digit once trimmed",
    "GET /knowledge-bases/{knowledgeBaseId}/search": "q with a letter or digit (of any script) to search for",
    "POST /knowledge-bases": "a name not of spaces only",
    "PATCH /knowledge-bases/{knowledgeBaseId}": "a name not of spaces only",
    "POST /knowledge-bases/{knowledgeBaseId}/articles": "a title and body not of spaces only",
    "PATCH /knowledge-bases/{knowledgeBaseId}/articles/{articleId}": "a title and body not of spaces only",
    "POST /knowledge-bases/{knowledgeBaseId}/documents": "a file of its kind with text in it; a name not of spaces "
                                                         "only",
    "POST /knowledge-bases/{knowledgeBaseId}/documents/sync": "url: a host of valid labels that resolves to public "
                                                              "addresses only",
})
# Signing in needs a user's password, and its second step a challenge a sign-in gave; a web-call
# token is for an agent of the workspace that has a live version, or a version of that agent.
REFUSED_BY_RULES_NO_SCHEMA_STATES.update({
    "POST /auth/sign-in": "the email and password of a user (the same 401 for any other)",
    "POST /auth/sign-in/mfa": "a challenge a sign-in gave, and a code of the user's second factor",
    "POST /web-calls/tokens": "agentId an agent of the workspace with a live version, or versionId one of its versions",
})
# What a workspace's API key may not do, being no user's own credential: mint a user's access
# tokens, create workspaces; and the permission this key was not given.
REFUSED_TO_A_KEY = {"POST /access-tokens", "DELETE /access-tokens/{tokenId}", "POST /workspaces", "DELETE /workspace",
                    # A second factor is its user's own: enrolled, confirmed and turned off with an access token.
                    "POST /auth/mfa/enrol", "POST /auth/mfa/confirm", "DELETE /auth/mfa"}
# Operations without a credential whose own secret (a password, a sign-in's challenge, a web-call
# token) is in the body: 401 to whatever a run generates, which schemathesis reads as refused access.
REFUSED_WITHOUT_THEIR_SECRET = {"POST /auth/sign-in", "POST /auth/sign-in/mfa", "POST /auth/sign-in/mfa-enrol",
                                "POST /auth/sign-in/mfa-confirm", "POST /web-calls/redeem"}


# A 404 for an id the request's body names (``entityId: no workflow … in this workspace.``, ``No
# agent … in this workspace.``: ids of other workspaces are not found, wherever they are given)
# that schemathesis, having just created the resource of the path, reports as that resource gone
# missing (ST302). Its report holds no response, so each such failure is read from the printed
# one and allowed only when the 404 names an id that the failing request sent in its body and not
# in its path, where the created resource's id is.
_CREATED_NOT_FOUND = re.compile(r"ST302 Created resource not found.*?\[404\] Not Found:\s*`(\{.*?\})`"
                                r".*?Reproduce with:\s*\n(?:.*curl [^\n]*\n)*?.*?(curl [^\n]*)\n\s*\n", re.S)
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _names_a_body_id(body: dict, curl: str) -> bool:
    named = set(_UUID.findall(body["data"]["message"]))
    sent, _, url = curl.rpartition(" '")
    path = url.split("?", 1)[0]
    return bool(named) and all(i in sent and i not in path for i in named)


def st302_about_body_ids(output: str, summary: dict) -> bool:
    """Whether every ST302 of the run is a 404 that names an id of the failing request's body."""
    reported = sum(f.get("count", 1) for f in summary["failures"] if f["code"] == "ST302")
    found = [(json.loads(body), curl) for body, curl in _CREATED_NOT_FOUND.findall(output)]
    return len(found) >= reported and all(_names_a_body_id(body, curl) for body, curl in found)


def ci_key(server_url: str, owner: dict) -> str:
    headers = {"Authorization": f"Bearer {owner['token']}"}
    catalog = httpx.get(server_url + "/api/v2/permissions", headers=headers, timeout=30)
    assert catalog.status_code == 200, catalog.text
    permissions = [p for p in catalog.json()["data"]["result"]["permissions"] if p != "workspace:delete"]
    created = httpx.post(server_url + "/api/v2/api-keys", params={"workspaceId": owner["workspaceId"]},
                         headers=headers, timeout=30,
                         json={"name": "ci", "userId": owner["userId"], "permissions": permissions})
    assert created.status_code == 200, created.text
    return created.json()["data"]["result"]["key"]


@pytest.mark.slow  # every operation through every phase against a live server: a few minutes
def test_a_stock_schemathesis_run_with_a_key_and_a_workspace_finds_nothing_else(conversing_server, tmp_path):
    live_server = conversing_server
    owner = live_server.admin("bootstrap", "--workspace", "w", "--email", "a@example.com")
    key = ci_key(live_server.url, owner)
    config = tmp_path / "schemathesis.toml"
    config.write_text(f'[parameters]\n"query.workspaceId" = "{owner["workspaceId"]}"\n')
    report = tmp_path / "report.json"
    command = [
        str(Path(sys.executable).with_name("st")), "--config-file", str(config),
        "run", f"{live_server.url}/api/v2/openapi.json",
        "--checks", "all", "--phases", "examples,coverage,fuzzing,stateful",
        "--header", f"Authorization: Bearer {key}",
        # Bounded and repeatable: a few minutes on a 2-core host.
        "--max-examples", str(MAX_EXAMPLES), "--seed", str(SEED),
        "--report", "json", "--report-json-path", str(report),
    ]
    # The working directory takes whatever schemathesis leaves behind.
    run = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=900,
                         env={k: v for k, v in os.environ.items() if k != "SCHEMATHESIS_HOOKS"})
    server_log = "".join(log.read_text()[-20_000:] for log in tmp_path.glob("server-*.log"))
    output = run.stdout + run.stderr + "\n--- server log ---\n" + server_log
    (tmp_path / "schemathesis.log").write_text(output)  # whole, where pytest's message is cut
    summary = json.loads(report.read_text())

    assert summary["complete"] and summary["errors"] == [], output
    assert summary["operations"]["tested"] == len(operations()), output
    refused = {op for failure in summary["failures"] if failure["code"] == "ST202" for op in failure["operations"]}
    allowed = {"ST202", "ST302"} if st302_about_body_ids(run.stdout, summary) else {"ST202"}
    others = [failure for failure in summary["failures"] if failure["code"] not in allowed]
    assert others == [], output
    assert refused <= set(REFUSED_BY_RULES_NO_SCHEMA_STATES), (sorted(refused - set(REFUSED_BY_RULES_NO_SCHEMA_STATES)),
                                                               output)
    assert run.returncode == (1 if summary["failures"] else 0), output
    # The run kept its access to the end: only what a key may not do was refused it.
    assert set(summary["warnings"].get("missing_auth", [])) <= REFUSED_TO_A_KEY | REFUSED_WITHOUT_THEIR_SECRET, output
