"""What one authenticated request costs in SQL statements: a fixed number, whatever the page size.

A change that adds a statement to the path every request takes (admission) or a query per row
to a list fails here; if the addition is meant, change the count and say why in the commit.
"""
from __future__ import annotations

import logging
import threading

import pytest

from models.kernel.db import is_postgres
from tests.support import factories


def admission() -> int:
    """The credential (one join) and the rate-limit upsert: one statement on PostgreSQL (a WITH
    holds the upsert), two on SQLite, where an INSERT cannot stand in a WITH."""
    return 1 if is_postgres() else 2


class _Statements(logging.Handler):
    """Counts the statements Peewee sends (it logs each at DEBUG on the 'peewee' logger). On
    PostgreSQL a pool check-out that pinged the server would show here as a SELECT 1."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.sql: list[str] = []
        self._lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        if record.name != "peewee":  # peewee.pool's check-outs are no statements
            return
        with self._lock:
            self.sql.append(record.msg[0] if isinstance(record.msg, tuple) else str(record.msg))


@pytest.fixture
def statements():
    logger = logging.getLogger("peewee")
    handler, level = _Statements(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


def count(platform, statements, path: str, actor) -> list[str]:
    platform.client.get(path, headers=actor.headers)  # the first request of a credential also stamps lastUsedAt
    statements.sql.clear()
    response = platform.client.get(path, headers=actor.headers)
    assert response.status_code == 200, response.text
    return list(statements.sql)


def test_the_permission_catalog_costs_admission_alone(platform, statements):
    owner = platform.workspace()
    for actor in (owner, factories.api_key(owner)):
        assert len(count(platform, statements, "/api/v2/permissions", actor)) == admission()


@pytest.mark.parametrize("keys", [1, 20, 60])
def test_a_page_of_api_keys_costs_the_same_whatever_its_size(platform, statements, keys):
    owner = platform.workspace()
    for _ in range(keys):
        factories.api_key(owner)
    sql = count(platform, statements, f"/api/v2/api-keys?workspaceId={owner.workspace_id}&limit=50", owner)
    # The page (keys joined with their users), each row carrying the total.
    assert len(sql) == admission() + 1, sql


def test_a_page_past_the_end_counts_its_total_apart(platform, statements):
    owner = platform.workspace()
    factories.api_key(owner)
    sql = count(platform, statements, f"/api/v2/api-keys?workspaceId={owner.workspace_id}&offset=10", owner)
    assert len(sql) == admission() + 2, sql


@pytest.mark.parametrize("settings_overrides", [{"rate_limits_enabled": False}])
def test_without_rate_limits_admission_is_one_statement(platform, statements):
    owner = platform.workspace()
    assert len(count(platform, statements, "/api/v2/permissions", owner)) == 1


@pytest.mark.parametrize("items", [1, 20, 60])
def test_pages_of_agents_workflows_versions_and_branches_cost_the_same_whatever_their_size(platform, statements,
                                                                                          items):
    from models.configs import branches
    from models.configs.tables import Agent
    from models.kernel.db import session
    owner = platform.workspace()
    agent_id = factories.agent(owner)
    for _ in range(items):
        factories.agent(owner)
        factories.workflow(owner, [agent_id])
    factories.save_versions(owner, agent_id, items)
    with session():
        principal = factories.principal(owner)
        for _ in range(items):
            branches.create_branch(Agent, principal, workspace_id=owner.workspace_id, entity_id=agent_id, name="b",
                                   base_version_id=_head(agent_id))
    ws = f"workspaceId={owner.workspace_id}&limit=50"
    # Each page with its total in one statement.
    assert len(count(platform, statements, f"/api/v2/agents?{ws}", owner)) == admission() + 1
    assert len(count(platform, statements, f"/api/v2/workflows?{ws}", owner)) == admission() + 1
    # The entity's existence, the page, the open branches.
    assert len(count(platform, statements, f"/api/v2/versions/agent/{agent_id}?{ws}", owner)) == admission() + 3
    # The entity's existence, the page.
    assert len(count(platform, statements, f"/api/v2/branches/agent/{agent_id}?{ws}", owner)) == admission() + 2


def _head(agent_id: str) -> str:
    from models.configs.tables import Agent
    return Agent.get_by_id(agent_id).head_version_id


@pytest.mark.parametrize("calls", [1, 20, 60])
def test_a_page_of_calls_costs_the_same_whatever_its_size_and_filters(platform, statements, calls):
    owner = platform.workspace()
    for n in range(calls):
        factories.call(owner, tags=["a", "b"], customer=f"+1415555{n:04d}")
        if n % 2:
            factories.phone_alias(owner, f"customer {n}", f"+1415555{n:04d}")
    base = f"/api/v2/call?workspaceId={owner.workspace_id}&limit=50"
    # The page (calls joined with their agents and the customers' phone book names, each row carrying
    # the total), then the page's tags.
    assert len(count(platform, statements, base, owner)) == admission() + 2
    filtered = base + "&tag=a&status=completed&q=call&sortBy=durationMs&sortOrder=asc"
    assert len(count(platform, statements, filtered, owner)) == admission() + 2


@pytest.mark.parametrize("calls", [1, 20, 60])
def test_call_detail_records_cost_one_statement_a_batch_whatever_the_calls_and_filters(platform, statements, calls):
    owner = platform.workspace()
    for _ in range(calls):
        factories.call(owner)
    base = f"/api/v2/call/cdr?workspaceId={owner.workspace_id}"
    # Calls joined with their ledger entries, the report's fields read in the database: one
    # statement for up to 500 records.
    assert len(count(platform, statements, base, owner)) == admission() + 1
    filtered = base + "&format=ndjson&direction=inbound&since=2026-01-01T00:00:00Z&until=2036-01-01T00:00:00Z"
    assert len(count(platform, statements, filtered, owner)) == admission() + 1


@pytest.mark.parametrize("fields, calls", [(1, 1), (4, 30)])
def test_analytics_costs_the_same_whatever_the_fields_calls_and_buckets(platform, statements, fields, calls):
    from datetime import timedelta

    from models.kernel.db import utcnow
    owner = platform.workspace()
    agent_id = factories.agent(owner)
    for n in range(fields):
        kind = ("number", "boolean", "string", "enum")[n % 4]
        factories.insight(owner, f"f{n}", kind, ["a", "b"] if kind == "enum" else None, agents=[agent_id])
    for n in range(calls):
        factories.call(owner, started_at=utcnow() - timedelta(hours=n), agent_id=agent_id,
                       structured_data={"f0": n, "f1": n % 2 == 0, "f2": f"v{n % 3}", "f3": "a"})
    base = f"/api/v2/analytics/structured-data?workspaceId={owner.workspace_id}&granularity=hour"
    # The fields, their agents; then the series, the value counts and the histogram.
    assert len(count(platform, statements, base, owner)) == admission() + 5
    assert len(count(platform, statements, base + f"&agentId={agent_id}&callType=webCall", owner)) == admission() + 5


@pytest.mark.parametrize("events", [1, 30])
def test_webhook_lists_cost_the_same_whatever_their_size(platform, statements, events):
    from models.webhooks import addresses
    owner = platform.workspace()
    addresses.configure(allow_http=False, allow_private=False)
    subscription_id = factories.webhook_subscription(owner, "https://hooks.example.com/calls")[0]
    for _ in range(events):
        factories.call(owner)
    ws = f"workspaceId={owner.workspace_id}&limit=50"
    # Each page with its total in one statement.
    assert len(count(platform, statements, f"/api/v2/webhooks/subscriptions?{ws}", owner)) == admission() + 1
    assert len(count(platform, statements, f"/api/v2/webhooks/events?{ws}", owner)) == admission() + 1
    filtered = f"/api/v2/webhooks/events?{ws}&subscriptionId={subscription_id}&status=pending"
    assert len(count(platform, statements, filtered, owner)) == admission() + 1
    # Attempts: none yet, so whether the subscription exists is asked besides.
    deliveries = f"/api/v2/webhooks/subscriptions/{subscription_id}/deliveries?{ws}"
    assert len(count(platform, statements, deliveries, owner)) == admission() + 2


@pytest.mark.parametrize("rows", [1, 30])
def test_phone_numbers_and_the_phone_book_cost_the_same_whatever_their_size(platform, statements, rows):
    owner = platform.workspace()
    for n in range(rows):
        factories.phone_number(owner, f"+1415555{n:04d}", label=f"line {n}", inbound=n % 2 == 0)
        factories.phone_alias(owner, f"contact {n}", f"+1212555{n:04d}")
    ws = f"workspaceId={owner.workspace_id}&limit=50"
    # Each page with its total in one statement, searched or not.
    for path in (f"/phone-numbers?{ws}", f"/phone-numbers?{ws}&q=%2B1415&capability=inbound",
                 f"/phone-numbers?{ws}&q=line", f"/phone-aliases?{ws}", f"/phone-aliases?{ws}&q=contact"):
        assert len(count(platform, statements, "/api/v2" + path, owner)) == admission() + 1, path


@pytest.mark.parametrize("rows", [1, 30])
def test_workspace_administration_lists_cost_the_same_whatever_their_size(platform, statements, rows):
    owner = platform.workspace()
    ws = f"workspaceId={owner.workspace_id}&limit=50"
    for i in range(rows):
        factories.member(owner, "viewer")
        factories.call(owner)  # a debit in the ledger
        platform.client.post(f"/api/v2/invitations?workspaceId={owner.workspace_id}", headers=owner.headers,
                             json={"email": f"invitee-{i}@example.com", "role": "member"})  # and an audit entry
        platform.client.post(f"/api/v2/roles?workspaceId={owner.workspace_id}", headers=owner.headers,
                             json={"name": f"role {i}", "permissions": ["calls:read"]})
        platform.client.post("/api/v2/access-tokens", headers=owner.headers, json={})
        platform.client.post("/api/v2/workspaces", headers=owner.headers, json={"name": f"w{i}"})
    # Each page with its total in one statement.
    for path in (f"/members?{ws}", f"/invitations?{ws}", f"/workspace/credits/entries?{ws}&kind=call",
                 f"/workspace/logs?{ws}", f"/workspace/logs?{ws}&operationId=createRole&actorUserId={owner.user_id}",
                 "/workspaces?limit=50", "/access-tokens?limit=50"):
        assert len(count(platform, statements, "/api/v2" + path, owner)) == admission() + 1, path
    # Roles: the members' count per role, then the custom roles.
    assert len(count(platform, statements, f"/api/v2/roles?{ws}", owner)) == admission() + 2


@pytest.mark.parametrize("rows", [1, 30])
def test_do_not_call_and_schedule_lists_cost_the_same_whatever_their_size_and_filters(platform, statements, rows):
    owner = platform.workspace()
    factories.suppressed(owner, *[f"+1415555{i:04d}" for i in range(rows)], reason="asked")
    for i in range(rows):
        factories.schedule(owner, name=f"hours {i}")
    ws = f"workspaceId={owner.workspace_id}&limit=50"
    # Each page with its total in one statement, whichever filters are set.
    for path in (f"/suppressions?{ws}", f"/suppressions?{ws}&q=1415&source=manual&includeExpired=true",
                 f"/suppressions?{ws}&q=asked", f"/schedules?{ws}"):
        assert len(count(platform, statements, "/api/v2" + path, owner)) == admission() + 1, path
    # The check: the number's listing.
    check = f"/api/v2/suppressions/check?{ws}&number=%2B14155550000".replace("&limit=50", "")
    assert len(count(platform, statements, check, owner)) == admission() + 1


def test_resolving_an_inbound_route_costs_two_statements(platform, statements):
    """The number with its schedule, then the target with its published version."""
    owner = platform.workspace()
    agent_id = factories.agent(owner, name="Front desk")
    schedule_id = factories.schedule(owner)
    factories.phone_number(owner, "+14155550100", target=("agent", agent_id), schedule_id=schedule_id,
                           after_hours=("agent", agent_id))
    path = f"/api/v2/inbound-routes/resolve?workspaceId={owner.workspace_id}&number=%2B14155550100"
    assert len(count(platform, statements, path, owner)) == admission() + 2


@pytest.mark.parametrize("rows", [1, 30])
def test_campaign_lists_cost_the_same_whatever_their_size(platform, statements, rows):
    owner = platform.workspace()
    agent, number = factories.agent(owner), factories.phone_number(owner)
    campaign_id = None
    for i in range(rows):
        campaign_id = factories.campaign(owner, agent_id=agent, caller_number_id=number, name=f"campaign {i}",
                                         numbers=[f"+1415555{i:04d}", f"+1415666{i:04d}"])
        factories.phone_alias(owner, f"friend {i}", f"+1415555{i:04d}")
    ws = f"workspaceId={owner.workspace_id}&limit=50"
    # Each page with its total (and each campaign's count of contacts, phone number and each
    # contact's phone-book alias) in one statement.
    for path in (f"/campaign?{ws}", f"/campaign?{ws}&status=draft,running&q=CAMPAIGN",
                 f"/campaign/{campaign_id}/contacts?{ws}", f"/campaign/{campaign_id}/contacts?{ws}&state=pending&q=%2B1415"):
        assert len(count(platform, statements, "/api/v2" + path, owner)) == admission() + 1, path


def _claim_statements(platform, statements, owner, campaign_id: str, count: int) -> list[str]:
    statements.sql.clear()
    response = platform.client.post(f"/api/v2/campaign/{campaign_id}/claims?workspaceId={owner.workspace_id}",
                                    headers=owner.headers, json={"count": count})
    assert response.status_code == 200 and len(response.json()["data"]["result"]["claims"]) == count, response.text
    return [sql for sql in statements.sql if not sql.startswith("PREPARE")]


def test_a_claim_of_contacts_and_the_progress_cost_the_same_whatever_their_size(platform, statements):
    owner = platform.workspace()
    campaign_id = factories.campaign_row(owner, max_concurrent_calls=100)
    factories.contact_rows(owner, campaign_id, factories.numbers(60))
    _claim_statements(platform, statements, owner, campaign_id, 1)  # the first prepares the statements
    # The campaign locked, lapsed leases settled and put back, the in-progress count, the claim, the
    # attempts, the phone book's names: the same statements for 1 contact as for 50.
    one = _claim_statements(platform, statements, owner, campaign_id, 1)
    fifty = _claim_statements(platform, statements, owner, campaign_id, 50)
    assert len(one) == len(fifty)
    progress = f"/api/v2/campaign/{campaign_id}/progress?workspaceId={owner.workspace_id}"
    # The campaign's status, contacts by state, attempts by outcome.
    assert len(count(platform, statements, progress, owner)) == admission() + 3


@pytest.mark.parametrize("rows", [1, 30])
def test_feedback_lists_cost_the_same_whatever_their_size_and_filters(platform, statements, rows):
    owner = platform.workspace()
    colleague = factories.member(owner, "member")
    agent_id = factories.agent(owner)
    call_id = factories.call(owner, agent_id=agent_id)
    feedback_id = None
    for i in range(rows):
        feedback_id = factories.feedback(owner, f"feedback {i}", call_id=call_id, severity=1 + i % 5)
        factories.assignee(owner, feedback_id, owner.user_id)
        factories.assignee(owner, feedback_id, colleague.user_id)
        factories.comment(owner, feedback_id)
        factories.comment(owner, feedback_id)
    from models.feedback import feedbacks
    from models.kernel.db import session
    archived = factories.feedback(owner, "archived", agent_id=agent_id)
    factories.assignee(owner, archived, owner.user_id)
    with session():
        feedbacks.set_archived(workspace_id=owner.workspace_id, feedback_id=archived, archived=True)
    ws = f"workspaceId={owner.workspace_id}&limit=50"
    # The page (feedback joined with its call, agent, workflow and resolver, each row carrying the
    # total), then the page's assignees; whichever filters and order.
    for path in (f"/feedbacks?{ws}", f"/feedbacks?{ws}&agentId={agent_id}&minSeverity=1&resolved=false&q=FEED"
                 f"&assigneeId={colleague.user_id}&since=2020-01-01T00:00:00Z&sortBy=severity&sortOrder=asc",
                 f"/feedbacks?{ws}&severity=1,2,3,4,5&archived=true&sortBy=number"):
        assert len(count(platform, statements, "/api/v2" + path, owner)) == admission() + 2, path
    # A status filter reads the workspace's statuses first, to check them.
    assert len(count(platform, statements, f"/api/v2/feedbacks?{ws}&status=open,in_progress", owner)) == \
        admission() + 3
    # A feedback's comments and assignees: each page with its total in one statement.
    for path in (f"/feedbacks/{feedback_id}/comments?{ws}", f"/feedbacks/{feedback_id}/assignees?{ws}"):
        assert len(count(platform, statements, "/api/v2" + path, owner)) == admission() + 1, path


# --- optimization runs --------------------------------------------------------------------------

@pytest.mark.parametrize("rows", [1, 25])
def test_the_list_of_optimization_runs_costs_the_same_whatever_its_size(platform, statements, rows):
    import base64
    owner = platform.workspace()
    agent = factories.agent(owner, name="Booker")
    feedback = [factories.feedback(owner, f"Feedback {i}", agent_id=agent) for i in range(3)]
    member = factories.member(owner, "member")
    from models.feedback.tables import FeedbackAssignee
    from models.kernel.db import session, utcnow
    with session():
        FeedbackAssignee.create(workspace=owner.workspace_id, feedback=feedback[0], user_id=member.user_id,
                                assigned_by=owner.user_id,
                                assigned_at=utcnow())
    for i in range(rows):
        run_id = factories.optimization_run(owner, agent, feedback)
        factories.run_solutions(owner, run_id, [
            factories.proposal(feedback[:2], title=f"Fix {i}", path="/firstMessage", new_value=f"Hello {i}"),
            factories.proposal(feedback[2:], title=f"Cool {i}", path="/model/temperature", new_value=0.1)])
    state = base64.b64encode(b'{"status": ["pendingReview"], "agentIds": ["' + agent.encode() + b'"]}').decode()
    ws = f"workspaceId={owner.workspace_id}&limit=50"
    # The page; the summary by status (whose sum is the total: unfiltered, the workspace's tally of
    # runs by status, else a count of the filtered set); the page's solutions; their feedback ids;
    # those feedback with what they are about joined; their assignees.
    for path in (f"/solutions/runs?{ws}", f"/solutions/runs?{ws}&sortBy=solutionCount&search=fix",
                 f"/solutions/runs?{ws}&filters={state}"):
        assert len(count(platform, statements, "/api/v2" + path, owner)) == admission() + 6, path


@pytest.mark.parametrize("rows", [1, 30])
def test_reviews_and_feedback_references_cost_the_same_whatever_their_size(platform, statements, rows):
    owner = platform.workspace()
    agent_id = factories.agent(owner)
    factories.save_versions(owner, agent_id, 1)
    version_id = platform.client.get(f"/api/v2/versions/agent/{agent_id}", params={"workspaceId": owner.workspace_id},
                                     headers=owner.headers).json()["data"]["result"]["versions"][0]["id"]
    call_id = factories.call(owner, agent_id=agent_id)
    feedback_id = factories.feedback(owner, call_id=call_id)
    members = [factories.member(owner, "member") for _ in range(3)]
    for i in range(rows):
        review_id = factories.review(owner, call_id=call_id, title=f"review {i}")
        for member in members:
            platform.client.post(f"/api/v2/reviews/{review_id}/assignees", params={"workspaceId": owner.workspace_id},
                                 headers=owner.headers, json={"userId": member.user_id})
        factories.feedback_reference(owner, feedback_id, "review", review_id)
        factories.feedback_reference(owner, feedback_id, "persona", factories.persona(owner),
                                     relation="reproduces")
    factories.feedback_reference(owner, feedback_id, "version", version_id, relation="fixed_by")
    ws = f"workspaceId={owner.workspace_id}&limit=50"
    # The page with its total in one statement, whichever filters are set; the page's assignees.
    for path in (f"/reviews?{ws}", f"/reviews?{ws}&status=pending,in_review&targetType=call&targetId={call_id}"
                 f"&assigneeId={members[0].user_id}&since=2020-01-01T00:00:00Z&until=2100-01-01T00:00:00Z&sortOrder=asc"):
        assert len(count(platform, statements, "/api/v2" + path, owner)) == admission() + 2, path
    # The feedback's existence, then its references with what names each (versions, calls,
    # solutions, reviews and personas joined).
    references = f"/api/v2/feedbacks/{feedback_id}/references?workspaceId={owner.workspace_id}"
    assert len(count(platform, statements, references, owner)) == admission() + 2


@pytest.mark.parametrize("rows", [1, 30])
def test_unit_test_lists_cost_the_same_whatever_their_size(platform, statements, rows):
    owner = platform.workspace()
    agent_id = factories.agent(owner)
    workflow_id = factories.workflow(owner, [agent_id])
    suite_id = None
    for i in range(rows):
        suite_id = factories.suite(owner, f"suite {i}")
        factories.assertion(owner, suite_id)
        factories.assertion(owner, suite_id, "judge", rubric="Polite.")
        factories.assignment(owner, suite_id, "agent", agent_id)
        factories.assignment(owner, suite_id, "workflow", workflow_id)
    ws = f"workspaceId={owner.workspace_id}&limit=50"
    # The page with its total and each suite's count of assertions, searched and filtered or not;
    # the page's assignments with their agents' and workflows' names.
    for path in (f"/unit-tests/suites?{ws}", f"/unit-tests/suites?{ws}&q=SUITE&entityType=agent&entityId={agent_id}"):
        assert len(count(platform, statements, "/api/v2" + path, owner)) == admission() + 2, path
    # A suite's assertions, and its assignments with their names: each page with its total in one statement.
    for path in (f"/unit-tests/suites/{suite_id}/assertions?{ws}", f"/unit-tests/suites/{suite_id}/assignments?{ws}"):
        assert len(count(platform, statements, "/api/v2" + path, owner)) == admission() + 1, path


@pytest.mark.parametrize("rows", [1, 30])
def test_a_page_of_personas_costs_the_same_whatever_its_size_and_search(platform, statements, rows):
    owner = platform.workspace()
    for i in range(rows):
        factories.persona(owner, f"Caller {i}", goal=f"Book table {i}.", traits=["impatient"], facts={"n": str(i)})
    ws = f"workspaceId={owner.workspace_id}&limit=50"
    # The page with its total in one statement, searched or not.
    for path in (f"/personas?{ws}", f"/personas?{ws}&q=TABLE"):
        assert len(count(platform, statements, "/api/v2" + path, owner)) == admission() + 1, path
@pytest.mark.parametrize("rows", [1, 30])
def test_pages_of_knowledge_bases_and_articles_and_a_search_cost_the_same_whatever_their_size(platform, statements,
                                                                                              rows):
    owner = platform.workspace()
    kb = None
    for i in range(rows):
        kb = factories.knowledge_base(owner)
        factories.article(owner, kb, f"Refunds {i}")
    for i in range(rows):
        factories.article(owner, kb, f"Refund times {i}")
    ws = f"workspaceId={owner.workspace_id}&limit=50"
    # Each page with its total in one statement; the articles and the search check their knowledge base first.
    assert len(count(platform, statements, f"/api/v2/knowledge-bases?{ws}", owner)) == admission() + 1
    assert len(count(platform, statements, f"/api/v2/knowledge-bases/{kb}/articles?{ws}", owner)) == admission() + 2
    # The search checks its knowledge base, counts the query's words (each up to a bound), then ranks.
    search = f"/api/v2/knowledge-bases/{kb}/search?workspaceId={owner.workspace_id}&q=refund&topK=50"
    assert len(count(platform, statements, search, owner)) == admission() + 3


@pytest.mark.parametrize("rows", [1, 30])
def test_an_agents_knowledge_bases_and_retrieval_cost_the_same_whatever_their_number(platform, statements, rows):
    owner = platform.workspace()
    agent = factories.agent(owner)
    bases = [factories.knowledge_base(owner) for _ in range(rows)]
    for base in bases:
        factories.attachment(owner, agent, base)
    # The page with its total in one statement, the knowledge bases joined to their links.
    path = f"/api/v2/agents/{agent}/knowledge-bases?workspaceId={owner.workspace_id}&limit=50"
    assert len(count(platform, statements, path, owner)) == admission() + 1
    # Retrieval: the agent's knowledge bases, the query's words counted, the hits read with their bodies.
    for base in bases[:2]:
        factories.article(owner, base, "Refund times", "Refunds take five days.")
    body = {"agentId": agent, "query": "refund times", "topK": 20}
    for _ in range(2):  # the first request of a credential also stamps lastUsedAt
        statements.sql.clear()
        response = platform.client.post("/api/v2/knowledge-bases/retrieve", params={"workspaceId": owner.workspace_id},
                                        headers=owner.headers, json=body)
        assert response.status_code == 200, response.text
    assert len(response.json()["data"]["result"]["results"]) == min(rows, 2)
    assert len(statements.sql) == admission() + 3


@pytest.mark.parametrize("rows", [1, 30])
def test_a_page_of_documents_costs_the_same_whatever_its_size(platform, statements, rows):
    owner = platform.workspace()
    kb = factories.knowledge_base(owner)
    for i in range(rows):
        factories.document(owner, kb, f"# Part {i}\n\nOne.\n\n# Again {i}\n\nTwo.\n".encode())
    ws = f"workspaceId={owner.workspace_id}&limit=50"
    # The knowledge base checked, then the page with its total and each document's article count in one.
    path = f"/api/v2/knowledge-bases/{kb}/documents?{ws}"
    assert len(count(platform, statements, path, owner)) == admission() + 2


# --- chat sessions ------------------------------------------------------------------------------

@pytest.mark.parametrize("rows", [1, 30])
def test_pages_of_chat_sessions_and_messages_cost_the_same_whatever_their_size(platform, statements, rows):
    owner = platform.workspace()
    agent = factories.agent(owner)
    session_id = None
    for _ in range(rows):
        session_id = factories.chat_session(owner, agent)
        factories.chat_messages(owner, session_id, 2)
    base = f"/api/v2/chat/agent/{agent}/sessions"
    ws = f"workspaceId={owner.workspace_id}&limit=50"
    # Each page with its total in one statement (messages joined with their session); one session.
    for path in (f"{base}?{ws}", f"{base}/{session_id}/messages?{ws}",
                 f"{base}/{session_id}?workspaceId={owner.workspace_id}"):
        assert len(count(platform, statements, path, owner)) == admission() + 1, path


# --- live calls ---------------------------------------------------------------------------------

def _post_statements(platform, statements, owner, path: str, body: dict) -> list[str]:
    statements.sql.clear()
    response = platform.client.post(f"/api/v2{path}?workspaceId={owner.workspace_id}", headers=owner.headers, json=body)
    assert response.status_code == 200, response.text
    return [sql for sql in statements.sql if not sql.startswith("PREPARE")]


@pytest.mark.parametrize("rows", [1, 30])
def test_live_call_lists_and_a_claim_of_requests_cost_the_same_whatever_their_size(platform, statements, rows):
    owner = platform.workspace()
    agent = factories.agent(owner)
    call_id = None
    for _ in range(rows):
        call_id = factories.live_call(owner, agent, status="in-progress")
        factories.control(owner, call_id)
        factories.control(owner, call_id)
    ws = f"workspaceId={owner.workspace_id}&limit=50"
    # The calls not ended (filtered or not) with their total in one statement; a call's status and
    # its moves in two; its control requests in two (the call, then the page with its total).
    for path, cost in ((f"/call/live?{ws}", 1), (f"/call/live?{ws}&status=in-progress&agentId={agent}", 1),
                       (f"/call/{call_id}/status?workspaceId={owner.workspace_id}", 2), (f"/call/{call_id}/controls?{ws}", 2)):
        assert len(count(platform, statements, "/api/v2" + path, owner)) == admission() + cost, path
    # A claim: one statement for 1 request as for 50 (past the first, which prepares it).
    _post_statements(platform, statements, owner, "/call/controls/claim", {"count": 1})
    one = _post_statements(platform, statements, owner, "/call/controls/claim", {"count": 1})
    many = _post_statements(platform, statements, owner, "/call/controls/claim", {"count": 50})
    assert len(one) == len(many)


# --- call access --------------------------------------------------------------------------------

@pytest.mark.parametrize("rows", [1, 30])
def test_pages_of_web_call_tokens_and_share_links_cost_the_same_whatever_their_size(platform, statements, rows):
    owner = platform.workspace()
    agent, call = factories.agent(owner), factories.call(owner)
    for _ in range(rows):
        factories.web_call_token(owner, agent)
        factories.share_link(owner, call)
    ws = f"workspaceId={owner.workspace_id}&limit=50"
    # Each page with its total in one statement.
    for path in (f"/web-calls/tokens?{ws}", f"/call/{call}/share-links?{ws}"):
        assert len(count(platform, statements, "/api/v2" + path, owner)) == admission() + 1, path


def test_a_shared_call_costs_its_address_count_and_one_statement(platform, statements):
    owner = platform.workspace()
    _, token = factories.share_link(owner, factories.call(owner, agent_id=factories.agent(owner)))
    platform.client.get(f"/api/v2/shared/calls/{token}")
    statements.sql.clear()
    assert platform.client.get(f"/api/v2/shared/calls/{token}").status_code == 200
    # The client address's count (one upsert, no credential to read) and the link read with its call.
    assert len(statements.sql) == 2, statements.sql


# --- call metrics and dashboard widgets ------------------------------------------------------------

@pytest.mark.parametrize("calls", [1, 30])
def test_call_metrics_and_widgets_cost_the_same_whatever_the_calls_buckets_and_widgets(platform, statements, calls):
    from datetime import timedelta

    from models.kernel.db import utcnow
    owner = platform.workspace()
    agents = [factories.agent(owner), factories.agent(owner)]
    for n in range(calls):
        factories.call(owner, started_at=utcnow() - timedelta(hours=n + 1), agent_id=agents[n % 2],
                       ended_reason=f"reason {n % 5}")
    for n in range(calls):
        factories.widget(owner, dashboard=f"board {n % 3}", group_by="agent")
    base = f"/api/v2/call/metrics?workspaceId={owner.workspace_id}"
    # The figures by bucket and the end reasons by bucket, whatever the buckets; the agents' names
    # when there are agents to name.
    for path, extra in ((base, 2), (base + "&granularity=hour", 2), (base + "&granularity=total", 2),
                        (base + "&groupBy=agent&granularity=hour", 3), (base + f"&agentId={agents[0]}", 3)):
        assert len(count(platform, statements, path, owner)) == admission() + extra, path
    ws = f"workspaceId={owner.workspace_id}"
    # A page of widgets with its total in one statement, of one dashboard or of all.
    for path in (f"/analytics/widgets?{ws}&limit=50", f"/analytics/widgets?{ws}&dashboard=board%201"):
        assert len(count(platform, statements, "/api/v2" + path, owner)) == admission() + 1, path
    # A widget's data: the widget, then what its metrics cost.
    widget = factories.widget(owner, group_by="agent")
    assert len(count(platform, statements, f"/api/v2/analytics/widgets/{widget}/data?{ws}", owner)) == admission() + 4


# --- exports and models -------------------------------------------------------------------------

@pytest.mark.parametrize("exports", [1, 15])
def test_exports_and_models_cost_the_same_whatever_their_number(platform, statements, exports):
    owner = platform.workspace()
    for _ in range(exports):
        factories.export(owner)
        factories.run_exports()
    ws = f"workspaceId={owner.workspace_id}"
    # A page of exports with its total in one statement; one export in one.
    assert len(count(platform, statements, f"/api/v2/exports?{ws}&limit=50", owner)) == admission() + 1
    export_id = factories.export(owner)
    assert len(count(platform, statements, f"/api/v2/exports/{export_id}?{ws}", owner)) == admission() + 1
    # The speech models are read from the installation, the language models from the settings and
    # the workspace's llm integrations in one statement, whatever their number.
    for n in range(exports):
        factories.integration(owner, kind="llm", base_url="https://llm.example.com/v1", model=f"m{n}")
    assert len(count(platform, statements, f"/api/v2/models?{ws}", owner)) == admission() + 1


# --- the vocabulary ------------------------------------------------------------------------------

@pytest.mark.parametrize("rows", [1, 30])
def test_a_page_of_the_vocabulary_costs_the_same_whatever_its_size(platform, statements, rows):
    owner = platform.workspace()
    for i in range(rows):
        factories.term(owner, f"Term {i}", [f"term {i}", f"the term {i}"])
    path = f"/api/v2/custom/abbreviations?workspaceId={owner.workspace_id}&limit=50"
    # The page with its total in one statement.
    assert len(count(platform, statements, path, owner)) == admission() + 1


# --- integrations -------------------------------------------------------------------------------

@pytest.mark.parametrize("rows", [1, 30])
def test_a_page_of_integrations_costs_the_same_whatever_its_size_and_kind(platform, statements, rows):
    owner = platform.workspace()
    for i in range(rows):
        factories.integration(owner, name=f"CRM {i}")
    ws = f"workspaceId={owner.workspace_id}&limit=50"
    # The page with its total in one statement, of one kind or all.
    for path in (f"/integrations?{ws}", f"/integrations?{ws}&kind=crm"):
        assert len(count(platform, statements, "/api/v2" + path, owner)) == admission() + 1, path

# --- the audio library -------------------------------------------------------------------------------

@pytest.mark.parametrize("files", [1, 12])
def test_a_page_of_audio_files_costs_the_same_whatever_its_size_and_kind(platform, statements, files):
    owner = platform.workspace()
    for n in range(files):
        factories.audio_file(owner, kind=("greeting", "hold-music")[n % 2])
    ws = f"workspaceId={owner.workspace_id}"
    # A page with its total in one statement, of one kind or of all.
    for path in (f"/audio?{ws}&limit=50", f"/audio?{ws}&kind=hold-music"):
        assert len(count(platform, statements, "/api/v2" + path, owner)) == admission() + 1, path

# --- syncs to a runtime --------------------------------------------------------------------------

@pytest.mark.parametrize("rows", [1, 15])
def test_a_page_of_syncs_costs_the_same_whatever_its_size_and_status(platform, statements, rows):
    owner = platform.workspace()
    agent_id = factories.agent(owner)
    runtime_id = factories.runtime(owner)
    sync_ids = [factories.sync(owner, agent_id, runtime_id) for _ in range(rows)]
    ws = f"workspaceId={owner.workspace_id}"
    # A page with its total in one statement, of one status or all; one sync in one.
    for path in (f"/agents/{agent_id}/syncs?{ws}&limit=50", f"/agents/{agent_id}/syncs?{ws}&status=queued",
                 f"/agents/{agent_id}/syncs/{sync_ids[0]}?{ws}"):
        assert len(count(platform, statements, "/api/v2" + path, owner)) == admission() + 1, path
    # An empty page asks whether the agent exists.
    path = f"/api/v2/agents/{agent_id}/syncs?{ws}&status=failed"
    assert len(count(platform, statements, path, owner)) == admission() + 2
