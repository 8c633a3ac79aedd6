"""A vocabulary's rewriting of spoken forms into written ones (word boundaries, without regard to
case, longest first), its prompt within its budget, and edits carried onto timed words."""
from __future__ import annotations

from models.speech.rewriting import Edit, apply, merges
from models.speech.vocabulary import PROMPT_BUDGET_CHARS, Vocabulary

VOCABULARY = Vocabulary([("ACME-42", ["acme forty two"]), ("Acme Pay", ["acme pay"]), ("Wi-Fi", ["wi-fi"]),
                         ("Acme Pay Plus", ["acme pay plus"]), ("SIP", ["sip"])])


def rewritten(text: str) -> str:
    return apply(text, VOCABULARY.edits(text))


def test_spoken_forms_become_written_on_word_boundaries_without_regard_to_case():
    assert rewritten("Use acme pay over sip.") == "Use Acme Pay over SIP."
    assert rewritten("ACME PAY, Sip") == "Acme Pay, SIP"
    assert rewritten("gossip and sipping") == "gossip and sipping"


def test_the_longest_form_wins_and_spaces_or_hyphens_separate_words():
    assert rewritten("try acme pay plus") == "try Acme Pay Plus"
    assert rewritten("the Acme forty-two and acme  forty two") == "the ACME-42 and ACME-42"
    assert rewritten("wi fi, WI-FI") == "Wi-Fi, Wi-Fi"


def test_an_empty_vocabulary_changes_nothing():
    assert Vocabulary([]).edits("acme pay") == [] and not Vocabulary([])


def test_the_prompt_puts_the_callers_own_first_and_stays_within_its_budget():
    assert VOCABULARY.prompt("Billing call.") == "Billing call. ACME-42, Acme Pay, Wi-Fi, Acme Pay Plus, SIP."
    big = Vocabulary([(f"Product {i:03}", [f"product {i}"]) for i in range(200)])
    prompt = big.prompt("x" * 100)
    assert prompt.startswith("x" * 100 + " Product 000,") and len(prompt) <= PROMPT_BUDGET_CHARS
    assert Vocabulary([]).prompt(None) == ""


def test_edits_merge_the_words_they_touch_keeping_the_rest_of_them():
    words = [" Use", " acme", " pay,", " then", " sip."]
    text = "".join(words)
    edits = VOCABULARY.edits(text)
    assert merges(words, edits) == [(1, 2, " Acme Pay,"), (4, 4, " SIP.")]
    assert merges([" a", " b", " c"], [Edit(1, 4, "Q")]) == [(0, 1, " Q")]
