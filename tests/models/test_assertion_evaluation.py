"""An assertion evaluated on a finished conversation: each kind passing and failing with the
sentence saying what was found; a pattern that backtracks without end fails in its time budget
instead of holding the worker; a judge asked through a local chat-completions server (its verdict
and tokens, no endpoint, an endpoint that fails or answers no verdict); the structured fields the
assertions read; and what a simulation reads of the suites assigned to an agent."""
from __future__ import annotations

import logging
import threading
import time
from contextlib import contextmanager

import pytest

from models.assertions import assertions, evaluation, patterns, suites
from models.assertions.assertions import AssertionRecord, check_params
from models.assertions.evaluation import Verdict, evaluate, fields_needed
from models.conversations.transcript import Conversation, Turn
from models.kernel.chat_completions import NOT_CONFIGURED, ChatCompletionError, Endpoint, Usage
from models.kernel.db import session
from tests.support import factories


def said(*lines: str, ended_by: str = "caller", structured: dict | None = None) -> Conversation:
    """A conversation of ``lines`` said in turn, the agent first."""
    turns = [Turn("agent" if i % 2 == 0 else "caller", line, i * 2000) for i, line in enumerate(lines)]
    return Conversation(turns, ended_by, len(lines) * 2000, structured, Usage(10, 5))


CALL = said("Hello, how can I help?", "I was charged twice.", "I can issue a REFUND for that.",
            "Refunded by Monday?", "Yes, refunded by Monday.")


def verdict(kind: str, conversation: Conversation = CALL, **params) -> Verdict:
    record = AssertionRecord("a-1", "s-1", "name", kind, check_params(kind, params))
    return evaluate(record, conversation, endpoint=None)


def outcome(kind: str, conversation: Conversation = CALL, **params) -> tuple[bool, str]:
    found = verdict(kind, conversation, **params)
    assert found.assertion_id == "a-1" and found.usage == Usage()
    return found.passed, found.reason


# --- what was said ------------------------------------------------------------------------------

def test_contains_text_finds_the_first_turn_of_the_speaker_without_regard_to_case():
    assert outcome("contains", text="refund") == (True, 'The agent said "REFUND" at turn 3.')
    assert outcome("contains", text="refund", caseSensitive=True) == (True, 'The agent said "refund" at turn 5.')
    assert outcome("contains", text="charged", speaker="caller") == (True, 'The caller said "charged" at turn 2.')
    assert outcome("contains", text="monday", speaker="any") == (True, 'The caller said "Monday" at turn 4.')
    assert outcome("contains", text="charged") == (False, 'No agent turn says "charged".')
    assert outcome("contains", text="REFUND", speaker="caller", caseSensitive=True) == \
        (False, 'No caller turn says "REFUND".')
    assert outcome("contains", text="invoice", speaker="any") == (False, 'No turn says "invoice".')
    # Text is literal: a dot or a bracket is itself.
    assert outcome("contains", text="help?") == (True, 'The agent said "help?" at turn 1.')
    assert outcome("contains", text="h.lp") == (False, 'No agent turn says "h.lp".')
    assert outcome("contains", said(), text="hi") == (False, 'No agent turn says "hi".')


def test_contains_a_pattern_quotes_what_matched():
    assert outcome("contains", pattern=r"refund(ed)?\s+by") == \
        (True, 'The agent said "refunded by" at turn 5, matching /refund(ed)?\\s+by/.')
    assert outcome("contains", pattern="^i", speaker="caller") == \
        (True, 'The caller said "I" at turn 2, matching /^i/.')
    assert outcome("contains", pattern="^i", speaker="caller", caseSensitive=True) == \
        (False, "No caller turn matches /^i/.")
    assert outcome("contains", pattern="tuesday|friday", speaker="any") == \
        (False, "No turn matches /tuesday|friday/.")


def test_not_contains_passes_where_contains_fails():
    assert outcome("not-contains", text="sorry") == (True, 'No agent turn says "sorry".')
    assert outcome("not-contains", text="refund") == (False, 'The agent said "REFUND" at turn 3.')
    assert outcome("not-contains", pattern="by (monday|tomorrow)") == \
        (False, 'The agent said "by Monday" at turn 5, matching /by (monday|tomorrow)/.')
    assert outcome("not-contains", pattern="by (monday|tomorrow)", caseSensitive=True) == \
        (True, "No agent turn matches /by (monday|tomorrow)/.")


@pytest.mark.parametrize("kind", ["contains", "not-contains"])
def test_a_pattern_that_backtracks_without_end_fails_within_its_budget(monkeypatch, kind):
    monkeypatch.setattr(patterns, "MATCH_TIMEOUT_S", 0.2)
    long = said("a" * 30_000 + "!")
    started = time.monotonic()
    passed, reason = outcome(kind, long, pattern="(a+)+$")
    assert time.monotonic() - started < 2  # unbounded, it would run for ages
    assert not passed and reason == ("Matching /(a+)+$/ against the agent's turns took longer than 0.2 s, so the "
                                     "assertion fails: simplify the pattern.")
    # The budget is the assertion's over all the turns it reads, not each turn's.
    many = said(*(["a" * 3000 + "!", "b"] * 20))
    started = time.monotonic()
    passed, reason = outcome(kind, many, pattern="(a|aa)+$", speaker="any")
    assert time.monotonic() - started < 2 and not passed and "against the turns took longer" in reason


def test_a_match_lets_the_other_threads_run_meanwhile(monkeypatch):
    monkeypatch.setattr(patterns, "MATCH_TIMEOUT_S", 0.5)
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.005)

    thread = threading.Thread(target=tick)
    thread.start()
    try:
        outcome("contains", said("a" * 30_000 + "!"), pattern="(a+)+$")
    finally:
        stop.set()
        thread.join()
    assert len(ticks) > 10  # the GIL was released while the pattern backtracked (held, it would be 0 or 1)


def test_patterns_refused_before_they_are_stored():
    with pytest.raises(Exception, match="at most 1000 times"):
        check_params("contains", {"pattern": "x{,1001}"})
    started = time.monotonic()
    for pattern in ("(?:(?:a{100}){100})", "(?:a{10}){1000}", "a{1000}" * 70):
        patterns.check(pattern[:500])
    assert time.monotonic() - started < 2  # what passes the bounds compiles at once


# --- the structured output ----------------------------------------------------------------------

def test_a_json_field_equals_or_exists():
    call = said("Hi", structured={"orderNumber": "A-12", "approved": True, "amount": 12, "note": None,
                                  "items": [{"sku": 1}]})
    assert outcome("json-field", call, field="orderNumber", equals="A-12") == \
        (True, 'orderNumber is "A-12", as expected.')
    assert outcome("json-field", call, field="amount", equals=12.0) == (True, "amount is 12, as expected.")
    assert outcome("json-field", call, field="items", equals=[{"sku": 1.0}]) == \
        (True, 'items is [{"sku":1}], as expected.')
    assert outcome("json-field", call, field="approved", equals=1) == (False, "approved is true, not 1.")
    assert outcome("json-field", call, field="amount", equals=13) == (False, "amount is 12, not 13.")
    assert outcome("json-field", call, field="note", equals=None) == (True, "note is null, as expected.")
    assert outcome("json-field", call, field="missing", equals=None) == \
        (False, "The structured output has no missing (expected null).")
    assert outcome("json-field", call, field="orderNumber", exists=True) == \
        (True, 'The structured output has orderNumber: "A-12".')
    assert outcome("json-field", call, field="note", exists=True) == (False, "The structured output has no note.")
    assert outcome("json-field", call, field="note", exists=False) == (True, "The structured output has no note.")
    assert outcome("json-field", call, field="missing", exists=False) == (True, "The structured output has no missing.")
    assert outcome("json-field", call, field="approved", exists=False) == \
        (False, "The structured output has approved: true.")
    assert outcome("json-field", said("Hi"), field="orderNumber", exists=False) == \
        (False, "The conversation has no structured output.")


def test_the_fields_the_assertions_read():
    records = [AssertionRecord(str(i), "s", "n", kind, check_params(kind, params)) for i, (kind, params) in enumerate([
        ("json-field", {"field": "orderNumber", "exists": True}), ("json-field", {"field": "amount", "equals": 3}),
        ("json-field", {"field": "amount", "exists": True}), ("contains", {"text": "amount"}),
        ("judge", {"rubric": "Say the amount."})])]
    assert fields_needed(records) == {"orderNumber", "amount"}
    assert fields_needed([]) == set()


# --- how the conversation went ------------------------------------------------------------------

def test_max_turns_counts_both_sides():
    assert outcome("max-turns", max=5) == (True, "The conversation had 5 turns, within the maximum of 5.")
    assert outcome("max-turns", max=4) == (False, "The conversation had 5 turns, more than the maximum of 4.")
    assert outcome("max-turns", said("Hi"), max=1) == (True, "The conversation had 1 turn, within the maximum of 1.")


def test_ended_by_the_agent_or_the_caller():
    assert outcome("ended-by", said("Bye", ended_by="agent"), by="agent") == \
        (True, "The agent ended the conversation, as expected.")
    assert outcome("ended-by", said("Bye", ended_by="caller"), by="agent") == \
        (False, "The caller ended the conversation, not the agent.")
    assert outcome("ended-by", said("Bye", ended_by="caller"), by="caller") == \
        (True, "The caller ended the conversation, as expected.")
    assert outcome("ended-by", said("Bye", ended_by="max-turns"), by="caller") == \
        (False, "The conversation reached its maximum number of turns; the caller did not end it.")
    assert outcome("ended-by", said("Bye", ended_by="max-duration"), by="agent") == \
        (False, "The conversation reached its maximum duration; the agent did not end it.")


# --- the judge ----------------------------------------------------------------------------------

RUBRIC = "The agent offers a refund and says when it arrives."


def endpoint(llm, timeout_s: float = 5.0) -> Endpoint:
    return Endpoint(llm.base_url, "sk-test-judge", "judge-model", timeout_s)


def judged(at: Endpoint | None, conversation: Conversation = CALL) -> Verdict:
    record = AssertionRecord("a-9", "s-1", "Refund promised", "judge", check_params("judge", {"rubric": RUBRIC}))
    return evaluate(record, conversation, endpoint=at)


def test_a_judge_answers_pass_or_fail_with_a_reason_and_its_tokens(llm):
    llm.answer({"passed": True, "reason": "The agent offered a refund\n by Monday."})
    found = judged(endpoint(llm))
    assert found == Verdict("a-9", True, "The agent offered a refund by Monday.", found.usage)
    assert found.usage.prompt_tokens > 0 and found.usage.completion_tokens > 0
    body = llm.requests[0]["body"]
    assert body["model"] == "judge-model" and body["temperature"] == 0
    assert body["response_format"]["json_schema"]["schema"] == evaluation.JUDGE_SCHEMA
    assert body["messages"][0] == {"role": "system", "content": evaluation.JUDGE_SYSTEM}
    assert body["messages"][1]["content"] == f"Rubric:\n{RUBRIC}\n\nTranscript:\n{CALL.text()}"
    assert "Caller: I was charged twice." in llm.prompts()[0]
    llm.answer({"passed": False, "reason": "x" * 2000})
    found = judged(endpoint(llm), said())
    assert not found.passed and len(found.reason) == evaluation.REASON_MAX_CHARS and found.reason.endswith("…")
    assert "(The conversation has no turns.)" in llm.prompts()[1]
    llm.answer({"passed": False, "reason": " \x00 "})
    assert judged(endpoint(llm)).reason == "The judge gave no reason."


def test_a_judge_without_an_endpoint_fails_saying_how_to_configure_one(llm):
    assert judged(None) == Verdict("a-9", False, NOT_CONFIGURED, Usage())
    assert llm.requests == []


@pytest.mark.parametrize("script, says", [
    (lambda llm: llm.fail(500), "HTTP 500"),
    (lambda llm: llm.fail(401), "refused the API key"),
    (lambda llm: llm.garbage(), "not a chat completion"),
    (lambda llm: llm.answer("not json"), "not valid JSON"),
    (lambda llm: llm.answer({"passed": "yes", "reason": "ok"}), "without a boolean `passed` and a string `reason`"),
    (lambda llm: llm.answer({"verdict": "pass"}), "without a boolean `passed`"),
])
def test_an_endpoint_that_gives_no_verdict_raises_to_the_caller(llm, script, says):
    script(llm)
    with pytest.raises(ChatCompletionError, match=says) as caught:
        judged(endpoint(llm))
    assert llm.base_url in caught.value.message and "sk-test-judge" not in caught.value.message


def test_a_judge_that_takes_too_long_raises(llm):
    llm.slow(1.0, {"passed": True, "reason": "late"})
    with pytest.raises(ChatCompletionError, match="did not answer within 0.2 s") as caught:
        judged(endpoint(llm, timeout_s=0.2))
    assert caught.value.retryable


def test_rules_never_ask_the_endpoint(llm):
    for kind, params in [("contains", {"text": "refund"}), ("max-turns", {"max": 3}), ("ended-by", {"by": "agent"})]:
        record = AssertionRecord("a", "s", "n", kind, check_params(kind, params))
        assert evaluate(record, CALL, endpoint=endpoint(llm)).usage == Usage()
    assert llm.requests == []


# --- what a simulation reads --------------------------------------------------------------------

@contextmanager
def statements():
    """The statements Peewee sends meanwhile (it logs each at DEBUG)."""
    sent: list = []
    handler = logging.Handler(logging.DEBUG)
    handler.emit = lambda record: sent.append(record.msg)
    logger = logging.getLogger("peewee")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield sent
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_the_suites_assigned_and_their_assertions_in_one_statement_each(platform):
    owner, other = platform.workspace(), platform.workspace()
    agent_id = factories.agent(owner)
    workflow_id = factories.workflow(owner, [agent_id])
    second, first, unassigned = factories.suite(owner, "B checks"), factories.suite(owner, "A checks"), \
        factories.suite(owner, "C")
    made = {suite_id: [factories.assertion(owner, suite_id, name=f"{suite_id} {i}") for i in range(3)]
            for suite_id in (first, second, unassigned)}
    judge = factories.assertion(owner, second, "judge", rubric="Polite.")
    for suite_id in (first, second):
        factories.assignment(owner, suite_id, "agent", agent_id)
    factories.assignment(owner, unassigned, "workflow", workflow_id)
    theirs = factories.suite(other)
    factories.assertion(other, theirs)
    with session():
        # Once before counting: on PostgreSQL the first run of a statement on a connection prepares it.
        suites.suites_for(workspace_id=owner.workspace_id, entity_type="agent", entity_id=agent_id)
    with session(), statements() as sent:
        found = suites.suites_for(workspace_id=owner.workspace_id, entity_type="agent", entity_id=agent_id)
        assert [(s.id, s.name, s.assertion_count) for s in found] == [(first, "A checks", 3), (second, "B checks", 4)]
        assert suites.suites_for(workspace_id=owner.workspace_id, entity_type="workflow", entity_id=agent_id) == []
        assert suites.suites_for(workspace_id=other.workspace_id, entity_type="agent", entity_id=agent_id) == []
        records = assertions.assertions_of(workspace_id=owner.workspace_id, suite_ids=[s.id for s in found])
        assert len(sent) == 4, sent  # one each, the two for other entities included
        assert [r.id for r in records] == made[first] + made[second] + [judge]
        assert records[0] == AssertionRecord(made[first][0], first, f"{first} 0", "contains",
                                             {"text": "refund", "speaker": "agent", "caseSensitive": False},
                                             owner.user_id, records[0].created_at, records[0].updated_at)
        assert records[-1].kind == "judge" and records[-1].params == {"rubric": "Polite."}
        # Another workspace's suite yields nothing; none asked, none found.
        assert assertions.assertions_of(workspace_id=owner.workspace_id, suite_ids=[theirs]) == []
        assert assertions.assertions_of(workspace_id=owner.workspace_id, suite_ids=[]) == []
