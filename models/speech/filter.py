"""The speech filter: masks of profanity and personal data in a transcript.

What it masks, each kind on its own switch of the settings, and the mask put in its place:

- ``card`` → "[card]": 13 to 19 digits (spaces or hyphens between them allowed) that pass the Luhn
  check; a number that fails it (a 16-digit number mistyped, an order number) stays;
- ``email`` → "[email]": an address of the form name@domain.tld;
- ``phone`` → "[phone]": a number ``phonenumbers``' PhoneNumberMatcher finds valid, in the
  international form (+44 20 7946 0958) or the national form of ``phoneRegion`` (US by default:
  (415) 555-2671);
- ``profanity`` → "****": the words of a small built-in list (PROFANITY);
- ``word`` → "****": the words and phrases of the workspace's own list, on word boundaries.

Matching is without regard to case; kinds are looked for in the order above, and a span one kind
masked is not looked at again. Masking the words of a transcript follows ``models.speech.rewriting``.
"""
from __future__ import annotations

import re
from typing import NamedTuple

import phonenumbers

from models.kernel.errors import InvalidInput
from models.kernel.text import text_problem
from models.speech.rewriting import Edit

MASKS = {"card": "[card]", "email": "[email]", "phone": "[phone]", "profanity": "****", "word": "****"}
PROFANITY = ("arsehole", "asshole", "bastard", "bitch", "bullshit", "cunt", "damn", "dickhead", "fuck", "fucked",
             "fucker", "fucking", "motherfucker", "shit", "shitty", "wanker")
MAX_WORDS = 200
WORD_MAX_CHARS = 50
MAX_PREVIEW_CHARS = 20_000
DEFAULT_SETTINGS = {"enabled": False, "profanity": True, "phoneNumbers": True, "emails": True, "cardNumbers": True,
                    "phoneRegion": "US", "words": []}
_SWITCHES = ("enabled", "profanity", "phoneNumbers", "emails", "cardNumbers")

_CARD = re.compile(r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])")
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w-])")


class Match(NamedTuple):
    kind: str
    start: int
    end: int


def settings(value, current: dict | None = None, field: str = "settings.speechFilter") -> dict:
    """The filter's settings with ``value`` (wire names) merged onto ``current`` (the defaults when
    None); 400 naming the field that breaks a rule (under ``field``, where the object was given)."""
    merged = {**DEFAULT_SETTINGS, **(current or {})}
    if not isinstance(value, dict):
        raise InvalidInput(f"{field} must be an object.")
    unknown = sorted(set(value) - set(DEFAULT_SETTINGS))
    if unknown:
        raise InvalidInput(f"{field} has no field {unknown[0]!r}; it has {', '.join(DEFAULT_SETTINGS)}.")
    for key in _SWITCHES:
        if key in value:
            if not isinstance(value[key], bool):
                raise InvalidInput(f"{field}.{key} must be true or false.")
            merged[key] = value[key]
    if "phoneRegion" in value:
        region = value["phoneRegion"]
        if not isinstance(region, str) or region.upper() not in phonenumbers.SUPPORTED_REGIONS:
            raise InvalidInput(f"{field}.phoneRegion must be a two-letter region code such as US or GB.")
        merged["phoneRegion"] = region.upper()
    if "words" in value:
        merged["words"] = _words(value["words"], f"{field}.words")
    return merged


def _words(value, field: str) -> list[str]:
    if not isinstance(value, list) or len(value) > MAX_WORDS:
        raise InvalidInput(f"{field} must be a list of at most {MAX_WORDS} words or phrases.")
    words: list[str] = []
    for i, word in enumerate(value):
        at = f"{field}[{i}]"
        if not isinstance(word, str):
            raise InvalidInput(f"{at} must be text.")
        if problem := text_problem(word):
            raise InvalidInput(f"{at} {problem}.")
        word = " ".join(word.lower().split())
        if not 1 <= len(word) <= WORD_MAX_CHARS or not re.search(r"\w", word):
            raise InvalidInput(f"{at} must be 1 to {WORD_MAX_CHARS} characters once trimmed, with a letter or digit.")
        if word not in words:
            words.append(word)
    return words


def luhn_valid(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


class SpeechFilter:
    """A workspace's filter settings, compiled: ``matches`` and ``edits`` of a text."""

    def __init__(self, config: dict):
        self.config = {**DEFAULT_SETTINGS, **config}
        c = self.config
        self._profanity = _word_pattern(PROFANITY) if c["profanity"] else None
        self._words = _word_pattern(c["words"]) if c["words"] else None

    @property
    def enabled(self) -> bool:
        return bool(self.config["enabled"])

    def matches(self, text: str) -> list[Match]:
        """What the filter masks in ``text``, in order, not overlapping."""
        c = self.config
        found: list[Match] = []

        def add(kind: str, start: int, end: int) -> None:
            if not any(start < m.end and m.start < end for m in found):
                found.append(Match(kind, start, end))

        if c["cardNumbers"]:
            for m in _CARD.finditer(text):
                if luhn_valid(re.sub(r"\D", "", m.group(0))):
                    add("card", m.start(), m.end())
        if c["emails"]:
            for m in _EMAIL.finditer(text):
                add("email", m.start(), m.end())
        if c["phoneNumbers"] and any(ch.isdigit() for ch in text):
            for m in phonenumbers.PhoneNumberMatcher(text, c["phoneRegion"]):
                add("phone", m.start, m.end)
        if self._profanity is not None:
            for m in self._profanity.finditer(text):
                add("profanity", m.start(), m.end())
        if self._words is not None:
            for m in self._words.finditer(text):
                add("word", m.start(), m.end())
        return sorted(found, key=lambda m: m.start)

    def edits(self, text: str) -> list[Edit]:
        return [Edit(m.start, m.end, MASKS[m.kind]) for m in self.matches(text)]


def _word_pattern(words) -> re.Pattern:
    alternatives = [r"\s+".join(re.escape(w) for w in word.split()) for word in sorted(words, key=lambda w: -len(w))]
    return re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + r")(?!\w)", re.IGNORECASE)
