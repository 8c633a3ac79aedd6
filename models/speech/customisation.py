"""A workspace's speech customisation as its transcripts need it: its vocabulary and its filter,
read together (the speech server caches them: stt.customisation), and what applies them to a text.
"""
from __future__ import annotations

from typing import NamedTuple

from models.kernel.errors import InvalidInput
from models.kernel.scoping import Workspace
from models.kernel.sql import Prepared
from models.kernel.text import text_problem
from models.speech import filter as speech_filter
from models.speech.filter import Match, SpeechFilter
from models.speech.rewriting import apply
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
        settings = speech_filter.settings(given, settings)
    compiled = SpeechFilter(settings)
    matches = compiled.matches(text)
    return apply(text, compiled.edits(text)), matches
