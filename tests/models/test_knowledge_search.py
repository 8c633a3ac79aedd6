"""Knowledge search at the domain: a query's words (bounded, each once, no syntax), and the ranking
of a small fixed corpus on both databases, the expected order asserted."""
from __future__ import annotations

from models.kernel.db import session
from models.knowledge import search
from tests.support import factories


def test_a_querys_words_are_letters_and_digits_each_once_and_bounded():
    assert search.terms('"Refund" OR refund* NEAR(card) title:x -y _z') == ["refund", "or", "near", "card", "title",
                                                                            "x", "y", "z"]
    assert search.terms("!!! ???") == []
    assert search.terms("é déjà 42") == ["é", "déjà", "42"]
    assert len(search.terms(" ".join(f"w{i}" for i in range(100)))) == search.MAX_TERMS
    assert search.terms("a" * 999 + " tail") == ["a" * 999]  # cut at 1000 characters


def test_a_fixed_corpus_ranks_in_the_expected_order(platform):
    actor = platform.workspace()
    kb = factories.knowledge_base(actor)
    other = factories.knowledge_base(actor)
    title_hit = factories.article(actor, kb, "Refund policy", "How we pay money back to the card.")
    two_words = factories.article(actor, kb, "Money back", "A refund goes back to the card that paid.")
    one_word = factories.article(actor, kb, "Payments", "We take every card but no cheques.")
    factories.article(actor, kb, "Opening hours", "Open from nine to five.")
    factories.article(actor, other, "Refund policy", "Refund refund refund card card.")  # another knowledge base
    with session():
        hits = search.search(workspace_id=actor.workspace_id, knowledge_base_ids=[kb], query="refund card", limit=10)
    assert [h.article_id for h in hits] == [title_hit, two_words, one_word]
    assert hits[0].score > hits[1].score > hits[2].score > 0
    with session():
        assert search.search(workspace_id=actor.workspace_id, knowledge_base_ids=[kb], query="refund card",
                             limit=1)[0].article_id == title_hit


def test_common_words_are_left_out_beside_rarer_ones_and_alone_rank_their_titles_holders_first(platform, monkeypatch):
    # The bounds made small: a word in more than 3 articles is common, at most 4 candidates ranked.
    monkeypatch.setattr(search, "COMMON_ARTICLES", 3)
    monkeypatch.setattr(search, "CANDIDATES", 4)
    actor = platform.workspace()
    kb = factories.knowledge_base(actor)
    body = "Our shop sells shoes, boots and sandals to every customer."
    in_title = factories.article(actor, kb, "Shop shoes", body)
    plain = [factories.article(actor, kb, f"Article {n}", body) for n in range(3)]
    rare = factories.article(actor, kb, "Returns", "Return the boots within thirty days; returns are free.")

    def ids(query, limit=10, kbs=(kb,)):
        with session():
            return [h.article_id for h in search.search(workspace_id=actor.workspace_id, knowledge_base_ids=list(kbs),
                                                        query=query, limit=limit)]
    # "boots" is in 5 articles (common), "returns" in 1: only the rare word is searched.
    assert ids("boots returns") == [rare]
    # One common word alone, or common words only: at most the 4 candidates, the title's holder first.
    found = ids("shoes")
    assert len(found) == 4 and found[0] == in_title and set(found) <= {in_title, *plain}
    assert ids("shoes shop", limit=1) == [in_title]
    # A word in no article adds nothing; a query of such words finds nothing.
    assert ids("returns zebra") == [rare]
    assert ids("zebra unicorn") == []
    with session():
        [(hit, text)] = search.search_bodies(workspace_id=actor.workspace_id, knowledge_base_ids=[kb],
                                             query="returns", limit=5, body_chars=11)
    assert (hit.article_id, hit.snippet, text) == (rare, None, "Return the ")
