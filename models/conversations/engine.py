"""The conversation engine: an agent version's side and a caller's side, both spoken by an
OpenAI-compatible chat-completions endpoint, turn by turn until one side ends the call or a limit
does. Simulations run it to the end; a chat session asks it for one agent reply at a time.

The agent side speaks with the version's configuration: its prompt is the system message, its
first message opens the call, its end-call phrases end it (an agent reply that says one), its
model's temperature and token limit shape each reply, its maximum duration bounds the call. The
caller side is a persona (its goal, traits, facts, constraints, the way it ends calls, and the
scenario of the simulation), which answers in a JSON object: what it says and whether it hangs
up. A caller may instead be a script, lines said in order, for tests that must not vary.

Time in a conversation is the time its speech would take, not the time the endpoint took: a turn
lasts as long as its words spoken at ``WORDS_PER_SECOND`` (in voice mode, its synthesised audio),
and the other side answers after ``TURN_GAP_MS``. So a conversation's duration, and whether it
reached the agent's maximum, does not depend on how fast the endpoint was.

Nothing here touches the database: the caller passes in what it read and stores what comes out.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import NamedTuple

from models.conversations.transcript import Conversation, Turn
from models.kernel.chat_completions import ChatCompletionError, Endpoint, Usage, ask_json, complete_text

WORDS_PER_SECOND = 2.5
TURN_GAP_MS = 700
MIN_TURN_MS = 400
# What a side is shown of a long conversation: its system message and the latest turns.
HISTORY_TURNS = 60


class AgentScript(NamedTuple):
    """The agent side, from a version's configuration (models.conversations.targets)."""
    prompt: str
    first_message: str
    end_call_phrases: list[str]
    max_duration_s: int
    temperature: float
    max_tokens: int
    language: str


class Persona(NamedTuple):
    """The caller side as a persona plays it; ``scenario`` is the simulation's situation for it."""
    name: str
    goal: str
    traits: list[str]
    language: str
    opening_line: str | None
    facts: dict
    constraints: list[str]
    end_condition: str | None
    scenario: str | None = None


class Reply(NamedTuple):
    text: str
    ends_call: bool
    usage: Usage


class Cancelled(Exception):
    """The conversation was stopped from outside (its simulation cancelled)."""


CALLER_SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["message", "endCall"],
    "properties": {"message": {"type": "string"}, "endCall": {"type": "boolean"}}}


# ---------------------------------------------------------------------------------------------
# The agent side.

def agent_messages(agent: AgentScript, turns: list[Turn]) -> list[dict]:
    """What the agent's model is asked: its prompt, then the call so far (its own turns as the
    assistant's, the caller's as the user's: in voice mode what it heard, not what was said)."""
    system = agent.prompt
    if agent.language and not agent.language.lower().startswith("en"):
        system += f"\n\nSpeak in the language {agent.language}."
    messages = [{"role": "system", "content": system}]
    for turn in turns[-HISTORY_TURNS:]:
        if turn.speaker == "agent":
            messages.append({"role": "assistant", "content": turn.text})
        else:
            messages.append({"role": "user", "content": turn.heard if turn.heard is not None else turn.text})
    return messages


def ends_call(agent: AgentScript, text: str) -> bool:
    """Whether ``text`` says one of the agent's end-call phrases (case and spacing aside)."""
    said = " ".join(text.lower().split())
    return any(" ".join(phrase.lower().split()) in said for phrase in agent.end_call_phrases)


def agent_reply(endpoint: Endpoint, agent: AgentScript, turns: list[Turn]) -> Reply:
    """The agent's next reply to the conversation ``turns``; ChatCompletionError when the endpoint
    gives none."""
    answer = complete_text(endpoint, agent_messages(agent, turns), temperature=agent.temperature,
                           max_tokens=agent.max_tokens)
    text = answer.text.strip()
    return Reply(text, ends_call(agent, text), answer.usage)


# ---------------------------------------------------------------------------------------------
# The caller side.

def caller_messages(persona: Persona, turns: list[Turn]) -> list[dict]:
    """What the caller's model is asked: to play the persona, then the call so far from its side
    (the agent's turns as the user's, its own as the assistant's)."""
    brief = {"name": persona.name, "goal": persona.goal, "traits": persona.traits, "language": persona.language,
             "factsYouKnow": persona.facts, "thingsYouNeverDo": persona.constraints,
             "whenYouEndTheCall": persona.end_condition, "scenario": persona.scenario}
    system = ("You play a caller phoning a voice agent, to test it. Stay in character: speak as this person "
              "would on the phone, one short turn at a time, in the persona's language. Never say you are an "
              "AI. Answer a JSON object: `message`, what you say next, and `endCall`, true when you hang up "
              "after saying it. The persona:\n" + json.dumps(brief, ensure_ascii=False))
    messages = [{"role": "system", "content": system}]
    for turn in turns[-HISTORY_TURNS:]:
        role = "user" if turn.speaker == "agent" else "assistant"
        messages.append({"role": role, "content": turn.text})
    if len(messages) == 1 or messages[-1]["role"] == "assistant":
        messages.append({"role": "user", "content": "(The agent is silent, waiting for you to speak.)"})
    return messages


class Caller:
    """One side of a conversation that says something next: ``say(turns) -> Reply``."""

    def say(self, turns: list[Turn]) -> Reply:  # pragma: no cover - an interface
        raise NotImplementedError


class PersonaCaller(Caller):
    def __init__(self, endpoint: Endpoint, persona: Persona) -> None:
        self.endpoint, self.persona = endpoint, persona
        self._opened = False

    def say(self, turns: list[Turn]) -> Reply:
        if not self._opened and self.persona.opening_line:
            self._opened = True
            return Reply(self.persona.opening_line, False, Usage())
        self._opened = True
        answer, usage = ask_json(self.endpoint, caller_messages(self.persona, turns), schema_name="caller_turn",
                                 schema=CALLER_SCHEMA, temperature=0.7)
        message, end = answer.get("message"), answer.get("endCall")
        if not isinstance(message, str) or not isinstance(end, bool):
            raise ChatCompletionError("The language model endpoint answered the caller's turn without a "
                                      "string `message` and a boolean `endCall`.", retryable=True)
        return Reply(message.strip(), end, usage)


class ScriptedCaller(Caller):
    """Lines said in order; the caller hangs up after the last."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = list(lines)
        self._next = 0

    def say(self, turns: list[Turn]) -> Reply:
        line = self.lines[self._next]
        self._next += 1
        return Reply(line, self._next >= len(self.lines), Usage())


# ---------------------------------------------------------------------------------------------
# A whole conversation.

class Heard(NamedTuple):
    """What the agent side heard of a caller's words (voice mode), and how long they took to say."""
    text: str
    wer: float
    audio_ms: int


def speech_ms(text: str) -> int:
    return max(MIN_TURN_MS, round(len(text.split()) / WORDS_PER_SECOND * 1000))


def converse(endpoint: Endpoint, agent: AgentScript, caller: Caller, *, max_turns: int,
             hear: Callable[[str], Heard] | None = None, stop: Callable[[], bool] = lambda: False,
             on_turn: Callable[[Turn], None] = lambda turn: None) -> Conversation:
    """The conversation to its end. ``hear`` (voice mode) turns the caller's words into what the
    agent hears; ``stop`` is asked before each turn (Cancelled when it says so); ``on_turn`` sees
    each turn as it is said. ChatCompletionError when the endpoint fails either side."""
    turns: list[Turn] = []
    usage = Usage()
    clock = 0
    limit_ms = agent.max_duration_s * 1000

    def add(turn: Turn, spoken_ms: int) -> None:
        nonlocal clock
        turns.append(turn)
        on_turn(turn)
        clock = turn.at_ms + spoken_ms

    def result(ended_by: str) -> Conversation:
        return Conversation(turns, ended_by, min(clock, limit_ms), None, usage)

    if agent.first_message:
        add(Turn("agent", agent.first_message, 0), speech_ms(agent.first_message))
        if ends_call(agent, agent.first_message):
            return result("agent")
    while True:
        for speaker in ("caller", "agent"):
            if len(turns) >= max_turns:
                return result("max-turns")
            if clock + (TURN_GAP_MS if turns else 0) >= limit_ms:
                return result("max-duration")
            if stop():
                raise Cancelled()
            at = clock + (TURN_GAP_MS if turns else 0)
            if speaker == "caller":
                reply = caller.say(turns)
                usage += reply.usage
                if not reply.text:
                    if reply.ends_call:
                        return result("caller")  # hung up without a word
                    raise ChatCompletionError("The language model endpoint answered the caller's turn with an "
                                              "empty message.", retryable=True)
                if hear is not None:
                    heard = hear(reply.text)
                    add(Turn("caller", reply.text, at, heard.text, heard.wer), heard.audio_ms)
                else:
                    add(Turn("caller", reply.text, at), speech_ms(reply.text))
            else:
                reply = agent_reply(endpoint, agent, turns)
                usage += reply.usage
                add(Turn("agent", reply.text, at), speech_ms(reply.text))
            if reply.ends_call:
                return result(speaker) if clock <= limit_ms else result("max-duration")


# ---------------------------------------------------------------------------------------------
# The agent's structured output.

class Field(NamedTuple):
    """A structured-data field to extract at the end of a conversation (the agent's insights)."""
    name: str
    type: str  # string, number, boolean or enum
    enum_values: list | None
    description: str | None


def _field_schema(field: Field) -> dict:
    kind = {"string": "string", "number": "number", "boolean": "boolean", "enum": "string"}[field.type]
    schema: dict = {"type": [kind, "null"]}
    if field.type == "enum" and field.enum_values:
        schema["enum"] = [*field.enum_values, None]
    if field.description:
        schema["description"] = field.description
    return schema


def extract(endpoint: Endpoint, conversation: Conversation, fields: list[Field]) -> tuple[dict, Usage]:
    """The values of ``fields`` the conversation gives (null for what it does not say), as the
    endpoint reads them from the transcript; ChatCompletionError when it gives no usable answer."""
    schema = {"type": "object", "additionalProperties": False, "required": [f.name for f in fields],
              "properties": {f.name: _field_schema(f) for f in fields}}
    messages = [{"role": "system", "content": "Read the call transcript and fill in the structured data it "
                 "gives, each field null where the call does not say. Answer only the JSON object."},
                {"role": "user", "content": conversation.text()}]
    answer, usage = ask_json(endpoint, messages, schema_name="structured_data", schema=schema)
    return {f.name: answer.get(f.name) for f in fields}, usage
