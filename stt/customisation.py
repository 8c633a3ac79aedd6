"""A workspace's speech customisation on the speech server: its vocabulary and its speech filter
(models.speech), read at most once per ``STT_CUSTOMISATION_TTL_S`` seconds per workspace and
process, so that a request costs no query and a change shows within that time; and what applies
them to a transcript, its text, segments and words alike (a word the vocabulary or a mask touches
merges with its neighbours the same edit touches, timed from the first one's start to the last
one's end: models.speech.rewriting).
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import replace

from models.kernel.db import session
from models.speech.customisation import Customisation, customisation_of
from models.speech.rewriting import Edit, merges

from .engine import Transcript, Word


class CustomisationCache:
    """Each workspace's customisation, kept ``ttl`` seconds; only touched on the event loop."""

    def __init__(self, ttl: float):
        self.ttl = ttl
        self._kept: dict[str, tuple[float, Customisation]] = {}
        self._loading: dict[str, asyncio.Future] = {}

    async def get(self, workspace_id: str) -> Customisation:
        now = time.monotonic()
        kept = self._kept.get(workspace_id)
        if kept is not None and kept[0] > now:
            return kept[1]
        loading = self._loading.get(workspace_id)
        if loading is None:  # one read per workspace at a time, whatever the requests waiting for it
            loading = self._loading[workspace_id] = asyncio.get_running_loop().run_in_executor(
                None, _read, workspace_id)
            try:
                value = await asyncio.shield(loading)
                self._kept[workspace_id] = (time.monotonic() + self.ttl, value)
                if len(self._kept) > 10_000:  # many workspaces: drop the expired ones
                    now = time.monotonic()
                    self._kept = {k: v for k, v in self._kept.items() if v[0] > now}
                return value
            finally:
                self._loading.pop(workspace_id, None)
        return await asyncio.shield(loading)


def _read(workspace_id: str) -> Customisation:
    with session():
        return customisation_of(workspace_id)


def customised(transcript: Transcript, custom: Customisation) -> Transcript:
    """``transcript`` with the vocabulary's written forms and the filter's masks, in its text, its
    segments and its words; itself when the workspace has neither."""
    if not custom.vocabulary and custom.filter is None:
        return transcript
    return replace(transcript, text=custom.text(transcript.text),
                   segments=[replace(s, text=custom.text(s.text)) for s in transcript.segments],
                   words=customised_words(transcript.words, custom))


def customised_words(words: list[Word], custom: Customisation) -> list[Word]:
    """The vocabulary's then the filter's edits over the words' text (joined by spaces), carried onto
    the words."""
    for find in (custom.vocabulary.edits if custom.vocabulary else None,
                 custom.filter.edits if custom.filter is not None else None):
        if find is not None and words:
            words = _edited(words, find("".join(" " + w.word for w in words)))
    return words


def _edited(words: list[Word], edits: list[Edit]) -> list[Word]:
    if not edits:
        return words
    out, at = [], 0
    for merge in merges([" " + w.word for w in words], edits):
        out.extend(words[at:merge.first])
        run = words[merge.first:merge.last + 1]
        out.append(Word(merge.text.strip(), min(w.confidence for w in run), run[0].start, run[-1].end))
        at = merge.last + 1
    out.extend(words[at:])
    return out


def customised_text(text: str, custom: Customisation) -> str:
    return custom.text(text) if custom.vocabulary or custom.filter is not None else text


