"""Knowledge bases attached to agents (attached once, listed, detached, gone with the agent or the
knowledge base) and retrieval for an agent over HTTP: ranked across its attached knowledge bases
and never a detached one, topK and query at their bounds and just past them, hostile queries, and
another workspace's agents and knowledge bases (404)."""
from __future__ import annotations

from tests.support import factories
from tests.support.client import owner


def attach(api, agent_id: str, kb_id: str, expect: int = 200):
    result = api("PUT", f"/agents/{agent_id}/knowledge-bases/{kb_id}", expect)
    return result["knowledgeBase"] if expect == 200 else result


def retrieve(api, expect: int = 200, **body):
    result = api("POST", "/knowledge-bases/retrieve", expect, json=body)
    return result["results"] if expect == 200 else result


def test_a_knowledge_base_is_attached_once_listed_and_detached(platform):
    api = owner(platform)
    agent = factories.agent(api.actor)
    kb = factories.knowledge_base(api.actor, name="Billing FAQ")
    first = attach(api, agent, kb)
    assert (first["id"], first["agentId"], first["name"], first["attachedBy"]) == (kb, agent, "Billing FAQ",
                                                                                   api.actor.user_id)
    assert attach(api, agent, kb) == first  # idempotent
    assert api("GET", f"/agents/{agent}/knowledge-bases") == {
        "knowledgeBases": [first], "pagination": {"total": 1, "limit": 20, "offset": 0}}
    assert api("DELETE", f"/agents/{agent}/knowledge-bases/{kb}") == {"id": kb, "deleted": True}
    assert "is not attached" in api("DELETE", f"/agents/{agent}/knowledge-bases/{kb}", 404)["message"]
    assert api("GET", f"/agents/{agent}/knowledge-bases")["knowledgeBases"] == []


def test_deleting_the_agent_or_the_knowledge_base_removes_its_links(platform):
    api = owner(platform)
    agent, other_agent = factories.agent(api.actor), factories.agent(api.actor, name="other")
    kb, kept = factories.knowledge_base(api.actor), factories.knowledge_base(api.actor)
    for a in (agent, other_agent):
        attach(api, a, kb)
        attach(api, a, kept)
    api("DELETE", f"/knowledge-bases/{kb}")
    assert [k["id"] for k in api("GET", f"/agents/{agent}/knowledge-bases")["knowledgeBases"]] == [kept]
    api("DELETE", f"/agents/{agent}")
    assert [k["id"] for k in api("GET", f"/agents/{other_agent}/knowledge-bases")["knowledgeBases"]] == [kept]
    from models.knowledge.tables import KnowledgeBaseAgent
    from models.kernel.db import session
    with session():
        assert KnowledgeBaseAgent.in_workspace(api.actor.workspace_id).where(
            KnowledgeBaseAgent.agent == agent).count() == 0


def test_retrieval_ranks_across_the_attached_knowledge_bases_only(platform):
    api = owner(platform)
    agent = factories.agent(api.actor)
    billing, shipping, detached = (factories.knowledge_base(api.actor) for _ in range(3))
    refunds = factories.article(api.actor, billing, "Refunds", "Refunds are paid back to the card within five days.")
    invoices = factories.article(api.actor, billing, "Invoices", "An invoice is sent by email after each order.")
    returns = factories.article(api.actor, shipping, "Returns", "A return is refunded once the parcel arrives back.")
    factories.article(api.actor, detached, "Refunds policy", "Refunds refunds refunds to the card.")
    for kb in (billing, shipping, detached):
        factories.attachment(api.actor, agent, kb)
    api("DELETE", f"/agents/{agent}/knowledge-bases/{detached}")
    results = retrieve(api, agentId=agent, query="refund to my card")
    assert [r["articleId"] for r in results] == [refunds, returns]
    assert [r["knowledgeBaseId"] for r in results] == [billing, shipping]
    assert results[0]["score"] > results[1]["score"]
    assert results[0]["body"] == "Refunds are paid back to the card within five days." and not results[0]["truncated"]
    assert retrieve(api, agentId=agent, query="invoice email")[0]["articleId"] == invoices
    # An agent without knowledge bases: nothing to find.
    assert retrieve(api, agentId=factories.agent(api.actor, name="bare"), query="refund") == []


def test_top_k_and_query_at_their_bounds_and_just_past(platform):
    api = owner(platform)
    agent, kb = factories.agent(api.actor), factories.knowledge_base(api.actor)
    factories.attachment(api.actor, agent, kb)
    for n in range(22):
        factories.article(api.actor, kb, f"Refund {n}", "Refunds are paid back. " * (n + 1))
    assert len(retrieve(api, agentId=agent, query="refund")) == 5  # the default
    assert len(retrieve(api, agentId=agent, query="refund", topK=1)) == 1
    assert len(retrieve(api, agentId=agent, query="refund", topK=20)) == 20
    for top_k in (0, 21):
        assert "topK" in retrieve(api, 400, agentId=agent, query="refund", topK=top_k)["message"]
    assert len(retrieve(api, agentId=agent, query="refund " + "x" * 993)) == 5  # 1000 characters
    assert "query" in retrieve(api, 400, agentId=agent, query="refund " + "x" * 994)["message"]
    assert "query" in retrieve(api, 400, agentId=agent, query="")["message"]


def test_hostile_queries_are_words_or_a_clear_400(platform):
    api = owner(platform)
    agent, kb = factories.agent(api.actor), factories.knowledge_base(api.actor)
    factories.attachment(api.actor, agent, kb)
    refunds = factories.article(api.actor, kb, "Refunds", "Refunds are paid back to the card.")
    for query in ('"refund', 'refund*', 'NEAR(refund card)', 'refund OR card', 'refund AND NOT card', "card:refund",
                  "refund) OR (", "^refund", "refund -card"):
        assert [r["articleId"] for r in retrieve(api, agentId=agent, query=query)] == [refunds], query
    for query in ("!!! ???", '"', "*", "   "):
        assert retrieve(api, 400, agentId=agent, query=query)["code"] == "validation_failed", query
    assert retrieve(api, 400, agentId=agent, query="refund\x00")["code"]


def test_another_workspaces_agents_and_knowledge_bases_are_not_found(platform):
    api, other = owner(platform), owner(platform)
    agent, kb = factories.agent(api.actor), factories.knowledge_base(api.actor)
    mine_agent, mine_kb = factories.agent(other.actor), factories.knowledge_base(other.actor)
    attach(api, agent, kb)
    assert "agentId" in attach(other, agent, mine_kb, 404)["message"]
    assert "knowledge base" in attach(other, mine_agent, kb, 404)["message"]
    other("GET", f"/agents/{agent}/knowledge-bases", 404)
    other("DELETE", f"/agents/{agent}/knowledge-bases/{kb}", 404)
    assert "agentId" in retrieve(other, 404, agentId=agent, query="refund")["message"]
    assert api("GET", f"/agents/{agent}/knowledge-bases")["pagination"]["total"] == 1
