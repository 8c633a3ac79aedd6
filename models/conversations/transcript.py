"""What a conversation leaves: its turns (who said what, when, and in voice mode what the agent
heard), how it ended, its length, the agent's structured output and the tokens it cost."""
from __future__ import annotations

from typing import NamedTuple

from models.kernel.chat_completions import Usage

SPEAKERS = ("agent", "caller")
# How a conversation ends: one side hung up, or a limit of the simulation or of the agent ended it.
ENDINGS = ("agent", "caller", "max-turns", "max-duration")


class Turn(NamedTuple):
    speaker: str  # one of SPEAKERS
    text: str  # what was said
    at_ms: int  # when it started, from the conversation's start
    heard: str | None = None  # voice mode: what the agent side heard of it (our speech engine's words)
    wer: float | None = None  # voice mode: word error rate between ``text`` and ``heard``

    def as_json(self) -> dict:
        value = {"speaker": self.speaker, "text": self.text, "atMs": self.at_ms}
        if self.heard is not None:
            value |= {"heard": self.heard, "wordErrorRate": self.wer}
        return value

    @classmethod
    def from_json(cls, value: dict) -> Turn:
        return cls(value["speaker"], value["text"], value["atMs"], value.get("heard"), value.get("wordErrorRate"))


class Conversation(NamedTuple):
    turns: list[Turn]
    ended_by: str  # one of ENDINGS
    duration_ms: int
    structured: dict | None  # the agent's structured output, None when none was asked for
    usage: Usage

    def text(self, speaker: str | None = None) -> str:
        """The transcript as lines ``Agent: ...`` / ``Caller: ...``, or one side's words only."""
        if speaker is not None:
            return "\n".join(turn.text for turn in self.turns if turn.speaker == speaker)
        return as_text(self.turns)


def as_text(turns: list[Turn]) -> str:
    return "\n".join(f"{turn.speaker.capitalize()}: {turn.text}" for turn in turns)
