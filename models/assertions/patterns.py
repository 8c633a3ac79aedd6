"""Regular expressions from users, compiled and matched so that none can hold a worker.

A pattern is matched by the ``regex`` package, not ``re``: its ``timeout=`` stops a match that
backtracks without end (``(a+)+$`` on a long line of a's), and ``concurrent=True`` releases the GIL
while it runs, so that the other threads of the process go on meanwhile. A match that times out is
reported (``TimedOut``), never waited for: the assertion fails with the reason.

Compiling is bounded too: a pattern has at most ``MAX_PATTERN_CHARS`` characters, and its counted
repetitions (``{n}``, ``{n,m}``) at most ``MAX_REPEAT`` each and ``MAX_NESTED_REPEAT`` multiplied
along their nesting: the compiler expands nested counts (``(?:a{1000}){1000}`` takes seconds to
compile, one more level minutes), and no timeout covers compiling.
"""
from __future__ import annotations

import functools
import re
import time

import regex

from models.kernel.errors import InvalidInput
from models.kernel.text import printable, text_problem

MAX_PATTERN_CHARS = 500
MAX_REPEAT = 1000
MAX_NESTED_REPEAT = 10_000
# The time one assertion's matching may take over all the turns it reads.
MATCH_TIMEOUT_S = 1.0
_COUNT = re.compile(r"\{([0-9]*)(?:,([0-9]*))?\}")


class TimedOut(Exception):
    """Matching took longer than its budget."""


def check(pattern, field: str = "pattern") -> str:
    """``pattern`` as stored: text of 1 to MAX_PATTERN_CHARS characters on one line that compiles
    within the bounds above; InvalidInput naming ``field`` and, for a bad pattern, the compiler's
    error."""
    if not isinstance(pattern, str):
        raise InvalidInput(f"{field} must be text (a regular expression).")
    if problem := text_problem(pattern):
        raise InvalidInput(f"{field} {problem}.")
    if not 1 <= len(pattern) <= MAX_PATTERN_CHARS:
        raise InvalidInput(f"{field} must be 1 to {MAX_PATTERN_CHARS} characters; {len(pattern)} given.")
    if problem := _repeat_problem(pattern):
        raise InvalidInput(f"{field}: {problem}")
    try:
        compiled(pattern, False)
    except regex.error as exc:
        raise InvalidInput(f"{field} is not a valid regular expression: {exc}.") from None
    return pattern


@functools.lru_cache(maxsize=256)
def compiled(pattern: str, case_sensitive: bool) -> regex.Pattern:
    return regex.compile(pattern, 0 if case_sensitive else regex.IGNORECASE)


def search(pattern: regex.Pattern, text: str, deadline: float):
    """The first match of ``pattern`` in ``text``, or None; TimedOut once ``deadline`` (a
    ``time.monotonic()`` value) has passed."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimedOut()
    try:
        return pattern.search(text, timeout=remaining, concurrent=True)
    except TimeoutError:
        raise TimedOut() from None


def shown(pattern: str) -> str:
    """The pattern as a reason quotes it: /.../, cut when long."""
    return f"/{printable(pattern, 80)}/"


def _repeat_problem(pattern: str) -> str | None:
    """Why the counted repetitions of ``pattern`` are too large to compile safely, or None.

    A scan, not a parser: escapes, character classes and comments are skipped, groups are followed
    by their parentheses, and a count (``{n}``, ``{n,}``, ``{,m}``, ``{n,m}``) multiplies what it
    follows (a group: the largest product inside it). Braces that are no count (a literal ``{``,
    fuzzy ``{e<=1}``) repeat nothing. Where the scan reads more counts than the compiler would
    (in a verbose pattern's comment), it refuses more, never less."""
    stack = [1]  # per open group: the largest product of counts met inside it so far
    last = 1  # the product of what a count met next would repeat
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "\\":
            i, last = i + 2, 1
        elif char == "[":
            i, last = _class_end(pattern, i), 1
        elif pattern.startswith("(?#", i):  # a comment: up to the first ")", whatever it holds
            close = pattern.find(")", i)
            i, last = (close + 1 if close > 0 else n), 1
        elif char == "(":
            stack.append(1)
            i, last = i + 1, 1
        elif char == ")" and len(stack) > 1:
            last = stack.pop()
            stack[-1] = max(stack[-1], last)
            i += 1
        elif (count := _COUNT.match(pattern, i)) and (count[1] or count[2]):
            times = max(int(count[1] or 0), int(count[2] or 0))
            if times > MAX_REPEAT:
                return f"a counted repetition repeats at most {MAX_REPEAT} times; {count[0]} asks for {times}."
            last *= max(times, 1)
            if last > MAX_NESTED_REPEAT:
                return (f"counted repetitions nested in one another repeat at most {MAX_NESTED_REPEAT} times "
                        f"together; {count[0]} makes it {last}.")
            stack[-1] = max(stack[-1], last)
            i = count.end()
        else:
            i, last = i + 1, 1
    return None


def _class_end(pattern: str, start: int) -> int:
    """The index after the character class opened at ``start`` (``[...]``, ``[^]...]``, nested
    sets of the package's version 1 syntax counted alike)."""
    i, depth = start + 1, 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":  # a ] first in a class is literal
        i += 1
    while i < len(pattern) and depth:
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if char == "[" and pattern[i + 1:i + 2] == ":":  # a POSIX class, [:alpha:]
            close = pattern.find(":]", i + 2)
            i = close + 2 if close > 0 else i + 1
            continue
        if char == "]":
            depth -= 1
        i += 1
    return i
