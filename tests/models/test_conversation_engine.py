"""The agent side of the conversation engine against a local chat-completions server: what the
agent's model is sent (its prompt, the conversation in order, its model settings), the reply and
what it cost, the end-call phrase (case and spacing aside), and an endpoint that fails."""
from __future__ import annotations

import pytest

from models.conversations.engine import HISTORY_TURNS, AgentScript, agent_messages, agent_reply, ends_call
from models.conversations.transcript import Turn
from models.kernel.chat_completions import ChatCompletionError, Endpoint, Usage
from tests.support.chat_completions_server import words

AGENT = AgentScript(prompt="You book tables at Chez Test.", first_message="Chez Test, hello!",
                    end_call_phrases=["Have a good  EVENING", "goodbye"], max_duration_s=600, temperature=0.2,
                    max_tokens=150, language="en")
TURNS = [Turn("agent", "Chez Test, hello!", 0), Turn("caller", "A table for two.", 1500),
         Turn("agent", "For when?", 3000), Turn("caller", "Friday.", 4200)]


def endpoint(llm, timeout_s: float = 10.0) -> Endpoint:
    return Endpoint(llm.base_url, "sk-engine", "engine-model", timeout_s)


# --- what is sent --------------------------------------------------------------------------------

def test_the_agent_is_sent_its_prompt_then_the_conversation_its_own_turns_as_the_assistant():
    assert agent_messages(AGENT, TURNS) == [
        {"role": "system", "content": "You book tables at Chez Test."},
        {"role": "assistant", "content": "Chez Test, hello!"}, {"role": "user", "content": "A table for two."},
        {"role": "assistant", "content": "For when?"}, {"role": "user", "content": "Friday."}]
    assert agent_messages(AGENT, []) == [{"role": "system", "content": "You book tables at Chez Test."}]


def test_a_language_other_than_english_is_asked_for_in_the_system_message():
    for language, extra in (("de", "\n\nSpeak in the language de."), ("fr-CA", "\n\nSpeak in the language fr-CA."),
                            ("en", ""), ("en-GB", ""), ("EN-us", ""), ("", "")):
        system = agent_messages(AGENT._replace(language=language), [])[0]["content"]
        assert system == AGENT.prompt + extra, language


def test_in_voice_mode_the_agent_is_sent_what_it_heard():
    turns = [Turn("caller", "A table for two.", 0, heard="A cable for two.", wer=0.25), Turn("agent", "Sure.", 900)]
    assert [m["content"] for m in agent_messages(AGENT, turns)[1:]] == ["A cable for two.", "Sure."]


def test_a_long_conversation_is_sent_its_latest_turns():
    turns = [Turn("caller" if i % 2 else "agent", f"turn {i}", i * 1000) for i in range(HISTORY_TURNS + 5)]
    sent = agent_messages(AGENT, turns)
    assert len(sent) == HISTORY_TURNS + 1 and sent[0]["role"] == "system"
    assert [m["content"] for m in sent[1:]] == [f"turn {i}" for i in range(5, HISTORY_TURNS + 5)]
    assert len(agent_messages(AGENT, turns[:HISTORY_TURNS])) == HISTORY_TURNS + 1


# --- the end-call phrase -------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["Have a good evening", "have a good evening!", "Booked. HAVE A GOOD EVENING.",
                                  "Thanks, have   a\ngood\tevening", "Goodbye.", "ok GOODBYE now"])
def test_an_end_call_phrase_is_found_whatever_its_case_and_spacing(text):
    assert ends_call(AGENT, text)


@pytest.mark.parametrize("text", ["Have a good day.", "Have a nice evening.", "Good bye.", "good", ""])
def test_what_only_comes_close_to_a_phrase_does_not_end_the_call(text):
    assert not ends_call(AGENT, text)


def test_an_agent_without_end_call_phrases_never_ends_the_call():
    assert not ends_call(AGENT._replace(end_call_phrases=[]), "Have a good evening, goodbye.")


# --- a reply -------------------------------------------------------------------------------------

def test_a_reply_is_asked_with_the_agents_model_settings_and_says_what_it_cost(llm):
    llm.answer("  Friday at what time?\n")
    reply = agent_reply(endpoint(llm), AGENT, TURNS)
    assert reply.text == "Friday at what time?" and reply.ends_call is False
    request = llm.requests[-1]
    assert request["path"] == "/v1/chat/completions" and request["authorization"] == "Bearer sk-engine"
    body = request["body"]
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("engine-model", 0.2, 150)
    assert body["messages"] == agent_messages(AGENT, TURNS)
    prompt = sum(words(m["content"]) for m in body["messages"])
    assert reply.usage == Usage(prompt, 4)


def test_a_reply_that_says_an_end_call_phrase_ends_the_call(llm):
    llm.answer("Booked for Friday. Have a good evening!")
    assert agent_reply(endpoint(llm), AGENT, TURNS).ends_call is True


@pytest.mark.parametrize("fail, retryable, why", [
    (lambda llm: llm.fail(500), True, "answered HTTP 500"),
    (lambda llm: llm.fail(401), False, "refused the API key"),
    (lambda llm: llm.garbage(), True, "not a chat completion"),
    (lambda llm: llm.answer(" \n"), True, "answered no content"),
    (lambda llm: llm.slow(2, "Too late."), True, "did not answer within 0.5 s"),
])
def test_an_endpoint_that_gives_no_reply_raises_with_the_reason(llm, fail, retryable, why):
    fail(llm)
    with pytest.raises(ChatCompletionError) as raised:
        agent_reply(endpoint(llm, timeout_s=0.5), AGENT, TURNS)
    assert why in raised.value.message and raised.value.retryable is retryable
    assert "sk-engine" not in raised.value.message
