"""An assertion evaluated on a finished conversation: passed or failed, with a sentence saying what
was found ("The agent said "refund" at turn 3.", "No agent turn matches /refund(ed)?/.").

Rules run here, without the endpoint:

- ``contains`` / ``not-contains``: whether a turn of ``speaker`` (agent, caller or any) says
  ``text`` or matches ``pattern``, without regard to case unless ``caseSensitive``; turns are
  numbered from 1 over both sides, and a turn's ``text`` (what was said, not what the agent heard
  of it in voice mode) is read. A pattern whose matching takes longer than
  ``patterns.MATCH_TIMEOUT_S`` over the turns fails the assertion, either kind, saying so.
- ``json-field``: the agent's structured output (``conversation.structured``) holds ``field``
  (``exists``: true, a value that is not null; false, none or null) or holds it equal to
  ``equals`` (JSON equality: 1 equals 1.0, true does not equal 1). A conversation without
  structured output fails it.
- ``max-turns``: at most ``max`` turns, both sides'.
- ``ended-by``: the conversation ended by ``by`` (agent or caller hung up; a limit that ended it
  is neither).

A ``judge`` asks the chat-completions endpoint for a verdict on the transcript against its
rubric, in a JSON schema ({passed, reason}); without an endpoint it fails with
models.kernel.chat_completions.NOT_CONFIGURED, and an endpoint that gives no usable answer raises
ChatCompletionError to the caller (a simulation fails the iteration with its message).

``fields_needed`` tells which structured fields the assertions read, so that the simulation asks
the agent's structured output for them.
"""
from __future__ import annotations

import re
import time
from collections.abc import Iterable
from typing import NamedTuple

import orjson
import regex

from models.assertions import patterns
from models.assertions.assertions import AssertionRecord
from models.conversations.transcript import Conversation
from models.kernel.chat_completions import NOT_CONFIGURED, ChatCompletionError, Endpoint, Usage, ask_json, shown
from models.kernel.text import printable

# How much of what was found a reason quotes, and how long a judge's reason may be.
QUOTED_CHARS = 80
REASON_MAX_CHARS = 1000

JUDGE_SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["passed", "reason"],
    "properties": {"passed": {"type": "boolean"}, "reason": {"type": "string"}}}
JUDGE_SYSTEM = (
    "You judge a phone conversation between a voice agent (Agent) and a caller (Caller) against a rubric. "
    "Decide whether the conversation meets the rubric: passed is true if it does, false if it does not or if the "
    "transcript does not show that it does. Give the reason in one or two sentences that cite what was said. "
    "Answer only the JSON object.")

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


class Verdict(NamedTuple):
    assertion_id: str
    passed: bool
    reason: str  # a sentence saying what was found
    usage: Usage = Usage()  # the judge's tokens; none for a rule


def evaluate(assertion: AssertionRecord, conversation: Conversation, *, endpoint: Endpoint | None) -> Verdict:
    """The verdict of ``assertion`` on ``conversation``; a judge asks ``endpoint`` (None: failed,
    NOT_CONFIGURED), and raises ChatCompletionError when it gives no usable answer."""
    if assertion.kind == "judge":
        return _judge(assertion, conversation, endpoint)
    passed, reason = _RULES[assertion.kind](assertion.params, conversation)
    return Verdict(assertion.id, passed, reason)


def fields_needed(assertions: Iterable[AssertionRecord]) -> set[str]:
    """The fields of the agent's structured output that the ``json-field`` assertions read."""
    return {a.params["field"] for a in assertions if a.kind == "json-field"}


# --- what was said ------------------------------------------------------------------------------

_SIDE = {"agent": "agent", "caller": "caller", "any": ""}


def _said(params: dict, conversation: Conversation) -> tuple[bool, str]:
    """(whether a turn of the speaker says it, the sentence saying where or that none does)."""
    speaker = params["speaker"]
    if "pattern" in params:
        compiled = patterns.compiled(params["pattern"], params["caseSensitive"])
        wanted = f"matches {patterns.shown(params['pattern'])}"
    else:
        compiled = patterns.compiled(regex.escape(params["text"]), params["caseSensitive"])
        wanted = f'says "{printable(params["text"], QUOTED_CHARS)}"'
    deadline = time.monotonic() + patterns.MATCH_TIMEOUT_S
    for number, turn in enumerate(conversation.turns, 1):
        if speaker != "any" and turn.speaker != speaker:
            continue
        found = patterns.search(compiled, turn.text, deadline)
        if found is not None:
            said = f'The {turn.speaker} said "{printable(found[0], QUOTED_CHARS)}" at turn {number}'
            return True, said + (f", matching {patterns.shown(params['pattern'])}." if "pattern" in params else ".")
    side = _SIDE[speaker]
    return False, f"No {side + ' ' if side else ''}turn {wanted}."


def _timed_out(params: dict) -> str:
    whose = {"agent": "the agent's turns", "caller": "the caller's turns", "any": "the turns"}[params["speaker"]]
    return (f"Matching {patterns.shown(params['pattern'])} against {whose} took longer than "
            f"{patterns.MATCH_TIMEOUT_S:g} s, so the assertion fails: simplify the pattern.")


def _contains(params: dict, conversation: Conversation) -> tuple[bool, str]:
    try:
        return _said(params, conversation)
    except patterns.TimedOut:
        return False, _timed_out(params)


def _not_contains(params: dict, conversation: Conversation) -> tuple[bool, str]:
    try:
        found, reason = _said(params, conversation)
    except patterns.TimedOut:
        return False, _timed_out(params)
    return not found, reason


# --- the structured output ----------------------------------------------------------------------

def _json(value) -> str:
    return printable(orjson.dumps(value).decode(), QUOTED_CHARS)


def _same(a, b) -> bool:
    """JSON equality: numbers by value (1 == 1.0), booleans only with booleans, objects by their
    keys and values, arrays item by item."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _json_field(params: dict, conversation: Conversation) -> tuple[bool, str]:
    structured, field = conversation.structured, params["field"]
    name = printable(field, QUOTED_CHARS)
    if structured is None:
        return False, "The conversation has no structured output."
    value = structured.get(field)
    if "exists" in params:
        present = value is not None
        said = f"The structured output has {name}: {_json(value)}." if present \
            else f"The structured output has no {name}."
        return present == params["exists"], said
    expected = params["equals"]
    if field not in structured:
        return False, f"The structured output has no {name} (expected {_json(expected)})."
    if _same(value, expected):
        return True, f"{name} is {_json(value)}, as expected."
    return False, f"{name} is {_json(value)}, not {_json(expected)}."


# --- how the conversation went ------------------------------------------------------------------

def _max_turns(params: dict, conversation: Conversation) -> tuple[bool, str]:
    count, most = len(conversation.turns), params["max"]
    turns = f"{count} turn{'' if count == 1 else 's'}"
    if count <= most:
        return True, f"The conversation had {turns}, within the maximum of {most}."
    return False, f"The conversation had {turns}, more than the maximum of {most}."


_ENDINGS = {"agent": "The agent ended the conversation", "caller": "The caller ended the conversation",
            "max-turns": "The conversation reached its maximum number of turns",
            "max-duration": "The conversation reached its maximum duration"}


def _ended_by(params: dict, conversation: Conversation) -> tuple[bool, str]:
    ended, by = conversation.ended_by, params["by"]
    said = _ENDINGS.get(ended, f"The conversation ended by {ended}")
    if ended == by:
        return True, f"{said}, as expected."
    return False, f"{said}, not the {by}." if ended in ("agent", "caller") else f"{said}; the {by} did not end it."


_RULES = {"contains": _contains, "not-contains": _not_contains, "json-field": _json_field,
          "max-turns": _max_turns, "ended-by": _ended_by}


# --- the judge ----------------------------------------------------------------------------------

def judge_messages(rubric: str, conversation: Conversation) -> list[dict]:
    """What the judge is asked: the rubric, then the transcript."""
    transcript = conversation.text() or "(The conversation has no turns.)"
    return [{"role": "system", "content": JUDGE_SYSTEM},
            {"role": "user", "content": f"Rubric:\n{rubric}\n\nTranscript:\n{transcript}"}]


def _judge(assertion: AssertionRecord, conversation: Conversation, endpoint: Endpoint | None) -> Verdict:
    if endpoint is None:
        return Verdict(assertion.id, False, NOT_CONFIGURED)
    answer, usage = ask_json(endpoint, judge_messages(assertion.params["rubric"], conversation),
                             schema_name="verdict", schema=JUDGE_SCHEMA)
    passed, reason = answer.get("passed"), answer.get("reason")
    if not isinstance(passed, bool) or not isinstance(reason, str):
        # A server that does not enforce the schema: no verdict to keep, as if it had not answered.
        raise ChatCompletionError(f"The language model endpoint {shown(endpoint.base_url)} answered the judge "
                                  "without a boolean `passed` and a string `reason`.", retryable=True)
    reason = " ".join(_CONTROL.sub(" ", reason).split())
    if len(reason) > REASON_MAX_CHARS:
        reason = reason[:REASON_MAX_CHARS - 1] + "…"
    return Verdict(assertion.id, passed, reason or "The judge gave no reason.", usage)
