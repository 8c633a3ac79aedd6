"""A workspace's speech customisation as its transcripts need it: its vocabulary and its filter,
read together (the speech server caches them: stt.customisation), and what applies them to a text.
"""
from __future__ import annotations

from typing import NamedTuple

from models.calls.tables import Call
from models.kernel.errors import InvalidInput
from models.kernel.scoping import Workspace
from models.kernel.sql import Prepared
from models.kernel.text import text_problem
from models.speech import filter as speech_filter
from models.speech.filter import Match, SpeechFilter
from models.speech.rewriting import Edit, apply, merges
from models.speech.vocabulary import Vocabulary, vocabulary_of

_SETTINGS = Prepared(lambda workspace_id: Workspace.select(Workspace.settings).where(Workspace.id == workspace_id))


class Customisation(NamedTuple):
    vocabulary: Vocabulary
    filter: SpeechFilter | None  # None when the workspace's filter is off

    def text(self, text: str) -> str:
        """``text`` with the vocabulary's written forms, then masked."""
        if self.vocabulary:
            text = apply(text, self.vocabulary.edits(text))
        if self.filter is not None:
            text = apply(text, self.filter.edits(text))
        return text


def stored_transcript(workspace_id: str, text: str, words: list[dict]) -> tuple[str, list[dict]]:
    """A recording's transcript as a call stores it: with the workspace's vocabulary and, when it
    is on, its filter, in the text and the words ({word, start, end, confidence}) alike."""
    custom = customisation_of(workspace_id)
    if not custom.vocabulary and custom.filter is None:
        return text, words
    for find in (custom.vocabulary.edits if custom.vocabulary else None,
                 custom.filter.edits if custom.filter is not None else None):
        if find is not None and words:
            words = _edited_words(words, find("".join(" " + w["word"] for w in words)))
    return custom.text(text), words


def _edited_words(words: list[dict], edits: list[Edit]) -> list[dict]:
    out, at = [], 0
    for merge in merges([" " + w["word"] for w in words], edits):
        out.extend(words[at:merge.first])
        run = words[merge.first:merge.last + 1]
        out.append({"word": merge.text.strip(), "start": run[0].get("start"), "end": run[-1].get("end"),
                    "confidence": min(w.get("confidence", 1.0) for w in run)})
        at = merge.last + 1
    out.extend(words[at:])
    return out


def masked_text(workspace_id: str, text: str | None) -> str | None:
    """``text`` masked as the workspace's speech filter says when it is on, else as it is: one
    statement; none without a text."""
    if not text:
        return text
    compiled = speech_filter_of(workspace_id)
    if compiled is not None and (edits := compiled.edits(text)):
        return apply(text, edits)
    return text


def mask_reported_transcript(*, workspace_id: str, call_id: str, transcript: str | None) -> None:
    """The transcript a call's report brought, masked in the stored call when the workspace's filter
    is on (one statement when it is off; none without a transcript)."""
    masked = masked_text(workspace_id, transcript)
    if masked != transcript:
        Call.update(transcript=masked).where((Call.workspace == workspace_id) & (Call.id == call_id)).execute()


def filter_settings(workspace_id: str) -> dict:
    stored = _SETTINGS.scalar(workspace_id=workspace_id)
    settings = Workspace.settings.python_value(stored) if isinstance(stored, str) else (stored or {})
    return {**speech_filter.DEFAULT_SETTINGS, **(settings.get("speechFilter") or {})}


def speech_filter_of(workspace_id: str) -> SpeechFilter | None:
    """The workspace's speech filter, or None when it is off: one statement."""
    settings = filter_settings(workspace_id)
    return SpeechFilter(settings) if settings["enabled"] else None


def customisation_of(workspace_id: str) -> Customisation:
    """The workspace's vocabulary and filter: two statements."""
    return Customisation(vocabulary_of(workspace_id), speech_filter_of(workspace_id))


def preview(*, workspace_id: str, text, given: dict | None = None) -> tuple[str, list[Match]]:
    """``text`` masked by the workspace's filter settings with ``given`` merged on, every kind
    switched on applied whether the filter is enabled or not; and what was masked."""
    if not isinstance(text, str) or len(text) > speech_filter.MAX_PREVIEW_CHARS:
        raise InvalidInput(f"text must be text of at most {speech_filter.MAX_PREVIEW_CHARS} characters.")
    if problem := text_problem(text, multiline=True):
        raise InvalidInput(f"text {problem}.")
    settings = filter_settings(workspace_id)
    if given is not None:
        settings = speech_filter.settings(given, settings, field="filter")
    compiled = SpeechFilter(settings)
    matches = compiled.matches(text)
    return apply(text, compiled.edits(text)), matches
