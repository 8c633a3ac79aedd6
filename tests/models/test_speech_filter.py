"""The speech filter on every kind of personal data, at its boundaries and just past them."""
from __future__ import annotations

import re

import pytest

from models.kernel.errors import InvalidInput
from models.speech.filter import DEFAULT_SETTINGS, SpeechFilter, luhn_valid, settings
from models.speech.rewriting import apply


def masked(text: str, **config) -> str:
    f = SpeechFilter({**DEFAULT_SETTINGS, **config})
    return apply(text, f.edits(text))


def test_a_luhn_valid_16_digit_number_is_a_card_and_an_invalid_one_is_not():
    assert luhn_valid("4111111111111111") and not luhn_valid("4111111111111112")
    assert masked("pay with 4111111111111111 now") == "pay with [card] now"
    assert masked("pay with 4111-1111-1111-1111 now") == "pay with [card] now"
    assert masked("order 4111111111111112 shipped") == "order 4111111111111112 shipped"


def test_card_numbers_are_13_to_19_digits():
    assert masked("amex 378282246310005") == "amex [card]"  # 15 digits, Luhn-valid
    assert masked("ref 123456789012345") == "ref 123456789012345"  # 15 digits, not Luhn-valid: no card
    assert masked("ref 123456789012") == "ref 123456789012"  # 12 digits, whatever its check
    assert masked("ref 42424242424242424242") == "ref 42424242424242424242"  # 20 digits


def test_phone_numbers_in_national_and_international_forms():
    assert masked("call (415) 555-2671 today") == "call [phone] today"
    assert masked("call 415-555-2671 today") == "call [phone] today"
    assert masked("call +1 415 555 2671 today") == "call [phone] today"
    assert masked("call +44 20 7946 0958 today") == "call [phone] today"
    assert masked("call 020 7946 0958 today") == "call 020 7946 0958 today"  # national in GB, not in the US
    assert masked("call 020 7946 0958 today", phoneRegion="GB") == "call [phone] today"
    assert masked("it costs 2671 dollars") == "it costs 2671 dollars"


def test_emails():
    assert masked("write to jo.doe+tag@mail.example.co.uk.") == "write to [email]."
    assert masked("at jo@localhost or @handle") == "at jo@localhost or @handle"


def test_profanity_and_own_words_on_word_boundaries_without_regard_to_case():
    assert masked("SHIT, what a shitty day") == "****, what a **** day"
    assert masked("Scunthorpe and shitake") == "Scunthorpe and shitake"
    assert masked("project FALCON and falconry", words=["project falcon", "falcon"]) == "**** and falconry"


def test_each_kind_has_its_switch():
    text = "shit 4111111111111111 jo@example.com +44 20 7946 0958"
    assert masked(text, profanity=False, cardNumbers=False, emails=False, phoneNumbers=False) == text


def test_settings_merge_and_refuse_what_breaks_a_rule():
    assert settings({"words": [" A  b "]})["words"] == ["a b"]
    for bad, named in (({"enabled": "yes"}, "speechFilter.enabled "), ({"words": ["x" * 51]}, "speechFilter.words[0] "),
                       ({"words": ["w"] * 201}, "speechFilter.words "), ({"colour": 1}, "no field 'colour'")):
        with pytest.raises(InvalidInput, match=re.escape(named)):
            settings(bad)
