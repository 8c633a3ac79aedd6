"""Knowledge bases and their articles over HTTP: created, read, listed, changed and deleted (a
knowledge base with its articles); fields at their bounds and just past them; another workspace's
knowledge bases and articles (404); and search: ranked, each article re-indexed as it is changed
and gone from the index once deleted, and no query a syntax error."""
from __future__ import annotations

import pytest

from tests.support import factories
from tests.support.client import owner

KB_FIELDS = {"id", "workspaceId", "name", "description", "createdBy", "createdAt", "updatedAt"}
ARTICLE_FIELDS = {"id", "workspaceId", "knowledgeBaseId", "title", "body", "createdBy", "createdAt", "updatedAt"}


def create_kb(api, expect: int = 200, **body) -> dict:
    body.setdefault("name", "Billing FAQ")
    result = api("POST", "/knowledge-bases", expect, json=body)
    return result["knowledgeBase"] if expect == 200 else result


def create_article(api, kb_id: str, expect: int = 200, **body) -> dict:
    body.setdefault("title", "Refunds")
    body.setdefault("body", "Refunds are paid back to the card within five working days.")
    result = api("POST", f"/knowledge-bases/{kb_id}/articles", expect, json=body)
    return result["article"] if expect == 200 else result


def search(api, kb_id: str, q: str, expect: int = 200, **params) -> list[dict]:
    result = api("GET", f"/knowledge-bases/{kb_id}/search", expect, q=q, **params)
    return result["results"] if expect == 200 else result


def test_a_knowledge_base_is_created_read_listed_changed_and_deleted(platform):
    api = owner(platform)
    made = create_kb(api, name="  Billing FAQ ", description="What callers ask.")
    assert set(made) == KB_FIELDS
    assert (made["name"], made["description"], made["createdBy"]) == ("Billing FAQ", "What callers ask.",
                                                                       api.actor.user_id)
    assert api("GET", f"/knowledge-bases/{made['id']}")["knowledgeBase"] == made
    assert api("GET", "/knowledge-bases") == {"knowledgeBases": [made],
                                              "pagination": {"total": 1, "limit": 20, "offset": 0}}
    changed = api("PATCH", f"/knowledge-bases/{made['id']}", json={"description": None})["knowledgeBase"]
    assert changed["description"] is None and changed["name"] == "Billing FAQ"
    assert api("DELETE", f"/knowledge-bases/{made['id']}") == {"id": made["id"], "deleted": True}
    assert api("DELETE", f"/knowledge-bases/{made['id']}", 404)["message"] == (
        f"No knowledge base {made['id']} in this workspace.")
    assert api("GET", "/knowledge-bases")["knowledgeBases"] == []


def test_an_article_is_created_read_listed_changed_and_deleted(platform):
    api = owner(platform)
    kb = create_kb(api)
    made = create_article(api, kb["id"], title=" Refunds ", body="Paid back\nwithin five days. ")
    assert set(made) == ARTICLE_FIELDS
    assert (made["title"], made["body"], made["knowledgeBaseId"]) == ("Refunds", "Paid back\nwithin five days.",
                                                                      kb["id"])
    path = f"/knowledge-bases/{kb['id']}/articles"
    assert api("GET", f"{path}/{made['id']}")["article"] == made
    assert api("GET", path) == {"articles": [made], "pagination": {"total": 1, "limit": 20, "offset": 0}}
    changed = api("PATCH", f"{path}/{made['id']}", json={"title": "Refund times"})["article"]
    assert (changed["title"], changed["body"]) == ("Refund times", made["body"])
    assert api("DELETE", f"{path}/{made['id']}") == {"id": made["id"], "deleted": True}
    api("GET", f"{path}/{made['id']}", 404)
    api("DELETE", f"{path}/{made['id']}", 404)


def test_fields_at_their_bounds_and_just_past_them(platform):
    api = owner(platform)
    assert create_kb(api, name="n" * 100)["name"] == "n" * 100
    assert "name must be 1 to 100 characters" in create_kb(api, 400, name="   ")["message"]
    kb = create_kb(api)
    assert len(create_article(api, kb["id"], title="t" * 200, body="b" * 20_000)["body"]) == 20_000
    assert create_article(api, kb["id"], 400, title="t" * 201)["code"]
    assert create_article(api, kb["id"], 400, body="b" * 20_001)["code"]
    assert "body must be 1 to 20000" in create_article(api, kb["id"], 400, body="  \n ")["message"]
    api("PATCH", f"/knowledge-bases/{kb['id']}", 400, json={})


def test_another_workspaces_knowledge_bases_and_articles_are_not_found(platform):
    api, other = owner(platform), owner(platform)
    kb = create_kb(api)
    article = create_article(api, kb["id"])
    for method, path, body in [
            ("GET", f"/knowledge-bases/{kb['id']}", None),
            ("PATCH", f"/knowledge-bases/{kb['id']}", {"name": "Mine"}),
            ("DELETE", f"/knowledge-bases/{kb['id']}", None),
            ("POST", f"/knowledge-bases/{kb['id']}/articles", {"title": "x", "body": "y"}),
            ("GET", f"/knowledge-bases/{kb['id']}/articles", None),
            ("GET", f"/knowledge-bases/{kb['id']}/articles/{article['id']}", None),
            ("PATCH", f"/knowledge-bases/{kb['id']}/articles/{article['id']}", {"title": "x"}),
            ("DELETE", f"/knowledge-bases/{kb['id']}/articles/{article['id']}", None)]:
        other(method, path, 404, **({"json": body} if body is not None else {}))
    search(other, kb["id"], "refunds", 404)
    # An article is reached through its own knowledge base only.
    second = create_kb(api, name="Other")
    api("GET", f"/knowledge-bases/{second['id']}/articles/{article['id']}", 404)
    assert [r["articleId"] for r in search(api, kb["id"], "refunds")] == [article["id"]]
    assert search(api, second["id"], "refunds") == []


def test_search_ranks_follows_changes_and_deletions(platform):
    api = owner(platform)
    kb = create_kb(api)
    refunds = create_article(api, kb["id"], title="Refunds", body="Refunds are paid back within five days.")
    shipping = create_article(api, kb["id"], title="Shipping", body="Parcels ship in two days; no refunds on postage.")
    create_article(api, kb["id"], title="Opening hours", body="We are open from nine to five.")
    found = search(api, kb["id"], "refund")  # stemmed: refund finds refunds
    assert [r["articleId"] for r in found] == [refunds["id"], shipping["id"]]
    assert found[0]["score"] > found[1]["score"] > 0 and "[" in found[0]["snippet"]
    assert set(found[0]) == {"articleId", "knowledgeBaseId", "title", "score", "snippet"}
    assert len(search(api, kb["id"], "refund", topK=1)) == 1
    path = f"/knowledge-bases/{kb['id']}/articles"
    api("PATCH", f"{path}/{shipping['id']}", json={"body": "Parcels ship in two days."})
    assert [r["articleId"] for r in search(api, kb["id"], "refund")] == [refunds["id"]]
    assert [r["articleId"] for r in search(api, kb["id"], "parcels")] == [shipping["id"]]
    api("DELETE", f"{path}/{refunds['id']}")
    assert search(api, kb["id"], "refund") == []


@pytest.mark.parametrize("q", ['"refund', 'refund"', "refund OR", "NOT refund", "refund*", "(refund", "a:b", "refund's",
                               "refund\\",
                               "refund & | !", "NEAR(refund paid)", "-refund", "title:refund"])
def test_no_query_is_a_syntax_error(platform, q):
    api = owner(platform)
    kb = create_kb(api)
    create_article(api, kb["id"])
    assert isinstance(search(api, kb["id"], q), list)  # an answer, never a 500


def test_a_query_without_a_word_or_too_long_is_refused(platform):
    api = owner(platform)
    kb = create_kb(api)
    assert "q must hold at least one word" in search(api, kb["id"], "!!! ???", 400)["message"]
    search(api, kb["id"], "x" * 501, 400)
    assert isinstance(search(api, kb["id"], "refund " * 71), list)  # 497 characters, many words: fine
    search(api, kb["id"], "refund", 400, topK=51)


def test_deleting_a_knowledge_base_deletes_its_articles_and_their_index_entries(platform):
    api = owner(platform)
    kb = factories.knowledge_base(api.actor)
    factories.article(api.actor, kb)
    api("DELETE", f"/knowledge-bases/{kb}")
    api("GET", f"/knowledge-bases/{kb}/articles", 404)
    from models.kernel.db import database, is_postgres, session
    with session():
        assert database.execute_sql("SELECT COUNT(*) FROM knowledge_article").fetchone()[0] == 0
        if not is_postgres():
            assert database.execute_sql("SELECT COUNT(*) FROM knowledge_article_fts").fetchone()[0] == 0
