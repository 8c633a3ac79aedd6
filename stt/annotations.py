"""Whisper's non-speech annotations: what the model writes where it hears no words.

Trained on subtitles, whisper marks silence, music and noise in brackets, parentheses, asterisks
or music notes: "[BLANK_AUDIO]", "[ Silence ]", "[MUSIC]", "(inaudible)", "(upbeat music)",
"*laughs*", "♪". None of it is speech, so none of it reaches a client: the engine drops it from
every segment and word it returns (stt.engine), and the streaming policy from its hypotheses.
"""
from __future__ import annotations

import re

# An annotation runs from its opening mark to the closing one; whisper sometimes ends a segment
# inside one, so one left open runs to the end of the text.
_SPAN = re.compile(r"\[[^\]]*(?:\]|$)|\([^)]*(?:\)|$)|\*[^*]*(?:\*|$)|♪[^♪]*(?:♪|$)")


def is_annotation(word: str) -> bool:
    """Whether one word (whitespace-delimited) is, or is the start or end of, an annotation."""
    return word[:1] in "[(*♪" or word[-1:] in "])*♪"


def speech_words(words: list[str]) -> list[bool]:
    """For each word of one segment, in order: whether it is speech, i.e. neither inside an
    annotation of the segment's text nor marked as one itself ("(upbeat" and "music)" both
    belong to "(upbeat music)", and so does "upbeat" in "(very upbeat music)")."""
    text = " ".join(words)
    spans = [m.span() for m in _SPAN.finditer(text)]
    speech, start = [], 0
    for word in words:
        end = start + len(word)
        inside = any(s < end and start < e for s, e in spans)
        speech.append(not inside and not is_annotation(word))
        start = end + 1
    return speech
