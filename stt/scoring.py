"""Comparing a transcript with a reference text, for tests and benchmarks: case and punctuation
do not count, word insertions, deletions and substitutions do."""
from __future__ import annotations


def words(text: str) -> list[str]:
    return "".join(c.lower() if c.isalnum() or c.isspace() else " " for c in text).split()


def wer(reference: list[str], hypothesis: list[str]) -> float:
    """Word error rate: the edit distance between the word lists over the reference's length."""
    row = list(range(len(hypothesis) + 1))
    for i, r in enumerate(reference, 1):
        new = [i] + [0] * len(hypothesis)
        for j, h in enumerate(hypothesis, 1):
            new[j] = min(row[j] + 1, new[j - 1] + 1, row[j - 1] + (r != h))
        row = new
    return row[-1] / max(1, len(reference))
