"""What text the service accepts, on either database: the rule every string from a client meets;
and how a client's text is repeated in a message or a log line.

Refused everywhere: control characters (Unicode category Cc: U+0000-U+001F, U+007F-U+009F) and
unpaired surrogates (U+D800-U+DFFF on their own). PostgreSQL cannot store NUL at all, an
unpaired surrogate has no UTF-8 form (neither database driver can send it), and the other control
characters have no place in a name or an id and turn up in logs and terminals as escapes. Free
text, which may run over several lines (a description, a prompt, a comment), keeps tab, line feed
and carriage return; identifiers, names and every URL parameter do not.
"""
from __future__ import annotations

import re

from models.kernel.errors import InvalidInput

# A JSON parser joins an escaped pair (\ud83d\ude00) into one character, so a surrogate left in a
# decoded string is unpaired.
_ONE_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_MULTILINE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def text_problem(value: str, *, multiline: bool = False) -> str | None:
    """Why ``value`` cannot be accepted, as the end of a sentence naming the field, or None.

    The reason names the offending character by its code point, never by itself."""
    found = (_MULTILINE if multiline else _ONE_LINE).search(value)
    if found is None:
        return None
    code = ord(found.group())
    kind = "an unpaired surrogate" if 0xD800 <= code <= 0xDFFF else "a control character"
    return f"must not contain {kind} (U+{code:04X} at position {found.start()})"


def printable(value: str, limit: int = 40) -> str:
    """``value`` as a message or a log line may repeat it: control characters and surrogates
    escaped (a line break in a URL must not start a forged log line), and at most about ``limit``
    characters of it, with the full length said when it is cut."""
    shown = value if len(value) <= limit else value[:limit - 8]
    shown = _ONE_LINE.sub(lambda found: f"\\x{ord(found.group()):02x}" if ord(found.group()) < 0x100
                          else f"\\u{ord(found.group()):04x}", shown)
    return shown if len(value) <= limit else f"{shown}... ({len(value)} characters)"


def trimmed_text(value, field: str, max_chars: int, *, multiline: bool = False,
                 optional: bool = False) -> str | None:
    """``value`` trimmed: 1 to ``max_chars`` characters, or, ``optional``, None when it is None or
    blank; InvalidInput naming ``field`` and the rule otherwise."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be text.")
    if problem := text_problem(value, multiline=multiline):
        raise InvalidInput(f"{field} {problem}.")
    value = value.strip()
    if optional and not value:
        return None
    if not 1 <= len(value) <= max_chars:
        bounds = f"at most {max_chars}" if optional else f"1 to {max_chars}"
        raise InvalidInput(f"{field} must be {bounds} characters once trimmed; {len(value)} given.")
    return value

