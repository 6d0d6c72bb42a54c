"""``fold`` sees case exactly as ``re.IGNORECASE`` does, for lower-case ASCII patterns."""

from __future__ import annotations

import re
import string

import pytest

from groundlock.text.fold import fold

_ANY_LETTER = re.compile("[a-z]", re.IGNORECASE)
_LETTER = {letter: re.compile(letter, re.IGNORECASE) for letter in string.ascii_lowercase}


@pytest.mark.slow
def test_fold_agrees_with_re_ignorecase_on_every_code_point():
    disagreements = []
    for point in range(0x110000):
        char = chr(point)
        matched = (
            [x for x, pattern in _LETTER.items() if pattern.fullmatch(char)]
            if _ANY_LETTER.fullmatch(char)
            else []
        )
        expected = matched[0] if matched else char
        folded = fold(char)
        if folded != expected or (re.match(r"\w", folded) is None) != (
            re.match(r"\w", char) is None
        ):
            disagreements.append(hex(point))
    assert disagreements == []


def test_fold_keeps_length_and_positions():
    text = "\u0130GNORE the \u212aey \u017fystem, \u0131nstructions \u0345 caf\u00e9 \u00df"
    assert len(fold(text)) == len(text)
    assert fold(text) == "ignore the key system, instructions \u0345 caf\u00e9 \u00df"
