"""Edits of a transcript's text carried onto its words: a vocabulary's rewriting and the speech
filter's masks both find spans of a text and replace them, and a transcript's timed words must
follow without losing their times.

An edit is (start, end, replacement) over a text. Over words, the text is the words' texts joined
as they come (whisper's words carry their leading space), and every word an edit touches merges
into one: the part of the first word before the edit, the replacement, the part of the last word
after it; the merged word spans from the first word's start to the last word's end.
"""
from __future__ import annotations

from typing import NamedTuple


class Edit(NamedTuple):
    start: int
    end: int
    text: str


def apply(text: str, edits: list[Edit]) -> str:
    """``text`` with ``edits`` (in order, not overlapping) made."""
    out, at = [], 0
    for edit in edits:
        out.append(text[at:edit.start])
        out.append(edit.text)
        at = edit.end
    out.append(text[at:])
    return "".join(out)


class Merge(NamedTuple):
    first: int  # index of the first word the edit touches
    last: int  # index of the last (inclusive)
    text: str  # the merged word's text


def merges(words: list[str], edits: list[Edit]) -> list[Merge]:
    """What ``edits`` (over ``"".join(words)``, in order, not overlapping) make of ``words``: the
    runs of words to merge and the text of each merged word. Edits that touch the same word merge
    into one run."""
    bounds, at = [], 0
    for word in words:
        bounds.append((at, at + len(word)))
        at += len(word)
    joined = "".join(words)
    runs: list[tuple[int, int, list[Edit]]] = []
    for edit in edits:
        first = next((i for i, (s, e) in enumerate(bounds) if e > edit.start), None)
        if first is None:
            continue
        last = next((i for i in range(len(bounds) - 1, -1, -1) if bounds[i][0] < max(edit.end, edit.start + 1)),
                    first)
        last = max(first, last)
        if runs and runs[-1][1] >= first:
            runs[-1] = (runs[-1][0], max(runs[-1][1], last), runs[-1][2] + [edit])
        else:
            runs.append((first, last, [edit]))
    result = []
    for first, last, run_edits in runs:
        start, end = bounds[first][0], bounds[last][1]
        shifted = [Edit(e.start - start, e.end - start, e.text) for e in run_edits]
        result.append(Merge(first, last, apply(joined[start:end], shifted)))
    return result
