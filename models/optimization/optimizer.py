"""The built-in optimizer: a chat-completions endpoint asked for changes to an agent's configuration
that address its feedback, in a JSON schema (structured output).

The prompt holds the configuration, the run's instructions and each feedback (title, description,
severity, and an excerpt of its call's summary and transcript), every part bounded so that a run
of 100 feedback on long calls stays within a model's context. The answer is only a proposal: each
solution is checked (models.optimization.solutions.check) and those that fail are dropped and
reported with their reason, never repaired or invented.
"""
from __future__ import annotations

import json
from typing import NamedTuple

from models.kernel.chat_completions import ChatCompletionError, Endpoint, complete_json

EXCERPT_CHARS = 1500  # of a call's summary and of its transcript, each
DESCRIPTION_CHARS = 2000
MAX_SOLUTIONS = 20

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["solutions"],
    "properties": {
        "solutions": {
            "type": "array",
            "maxItems": MAX_SOLUTIONS,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["title", "explanation", "path", "newValue", "feedbackIds"],
                "properties": {
                    "title": {"type": "string", "description": "What the change does, in a few words."},
                    "explanation": {"type": "string", "description": "Why it addresses the feedback."},
                    "path": {"type": "string", "description": "A JSON pointer into the configuration, e.g. /prompt."},
                    "newValue": {"description": "The whole new value at path (any JSON value)."},
                    "feedbackIds": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
    },
}

INSTRUCTIONS = (
    "You improve the configuration of an AI voice agent from the feedback people gave on its calls. "
    "Propose changes to the configuration, each a JSON pointer `path` into it and the whole `newValue` "
    "to put there (for a prompt, the complete new prompt text, not a fragment). Each change must keep "
    "the configuration valid for the same schema, address at least one feedback (list their ids in "
    "`feedbackIds`), and be independent of the others. Prefer few precise changes. Answer only JSON.")


class FeedbackItem(NamedTuple):
    id: str
    title: str
    description: str | None
    severity: int
    summary: str | None
    transcript: str | None


def _cut(text: str | None, most: int) -> str | None:
    if not text:
        return None
    return text if len(text) <= most else text[:most] + " [...]"


def messages(config: dict, feedback: list[FeedbackItem], instructions: str | None) -> list[dict]:
    items = [{"id": f.id, "title": f.title, "description": _cut(f.description, DESCRIPTION_CHARS),
              "severity": f.severity, "callSummary": _cut(f.summary, EXCERPT_CHARS),
              "callTranscriptExcerpt": _cut(f.transcript, EXCERPT_CHARS)} for f in feedback]
    user = {"configuration": config, "feedback": items}
    if instructions:
        user["instructions"] = instructions
    return [{"role": "system", "content": INSTRUCTIONS},
            {"role": "user", "content": json.dumps(user, ensure_ascii=False)}]


def propose(endpoint: Endpoint, config: dict, feedback: list[FeedbackItem], instructions: str | None) -> list:
    """The endpoint's proposals, unchecked: a list of whatever it put in ``solutions``.
    ChatCompletionError when it gives no usable answer."""
    answer = complete_json(base_url=endpoint.base_url, api_key=endpoint.api_key, model=endpoint.model,
                           timeout_s=endpoint.timeout_s, messages=messages(config, feedback, instructions),
                           schema_name="agent_solutions", schema=SCHEMA, strict=False)
    proposals = answer.get("solutions")
    if not isinstance(proposals, list):
        raise ChatCompletionError(f"The language model endpoint answered without a solutions array "
                                  f"(keys: {', '.join(sorted(answer))[:200] or 'none'}).", retryable=True)
    return proposals[:MAX_SOLUTIONS]
