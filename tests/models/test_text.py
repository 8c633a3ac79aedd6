"""The text every request string must be: no control characters, no unpaired surrogates; free text
keeps tab and line breaks. And how a client's text is repeated in messages and logs."""
from __future__ import annotations

import pytest

from models.kernel.text import printable, text_problem


@pytest.mark.parametrize("value", ["plain", "Zoë's key", "rocket \U0001F680", "\u00a0no-break", "\u2028", "\ufffd"])
def test_ordinary_text_is_accepted(value):
    assert text_problem(value) is None and text_problem(value, multiline=True) is None


@pytest.mark.parametrize("code", [0x00, 0x01, 0x08, 0x0b, 0x0c, 0x0e, 0x1f, 0x7f, 0x80, 0x85, 0x9f])
def test_control_characters_are_refused_everywhere(code):
    for multiline in (False, True):
        problem = text_problem(f"ab{chr(code)}c", multiline=multiline)
        assert problem == f"must not contain a control character (U+{code:04X} at position 2)"


@pytest.mark.parametrize("code", [0x09, 0x0a, 0x0d])
def test_tab_and_line_breaks_are_free_text_only(code):
    assert text_problem(f"a{chr(code)}b", multiline=True) is None
    assert "control character" in text_problem(f"a{chr(code)}b")


@pytest.mark.parametrize("code", [0xD800, 0xDBFF, 0xDC00, 0xDFFF])
def test_unpaired_surrogates_are_refused(code):
    assert text_problem(f"x{chr(code)}", multiline=True) == f"must not contain an unpaired surrogate (U+{code:04X} at position 1)"


def test_printable_escapes_what_could_forge_a_log_line_and_cuts_the_rest():
    assert printable("a\nb\x00\ud800") == "a\\x0ab\\x00\\ud800"
    assert printable("x" * 40) == "x" * 40
    assert printable("x" * 41) == "x" * 32 + "... (41 characters)"
    assert printable("y" * 1000, 100).endswith("... (1000 characters)")
