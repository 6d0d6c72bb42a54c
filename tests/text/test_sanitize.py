"""safe_normalize_v1: hidden characters out, whitespace collapsed, forgeries neutralised."""

from __future__ import annotations

import re
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from groundlock.text.sanitize import (
    FENCE_TAG_NAMES,
    HIDDEN_CHARACTERS,
    WHITESPACE_CHARACTERS,
    sanitize_evidence,
)

_WORD_RE = re.compile(r"[^\W_]+")


def test_whitespace_set_is_exactly_what_str_split_splits_on():
    splitting = {chr(cp) for cp in range(sys.maxunicode + 1) if len(f"a{chr(cp)}b".split()) == 2}
    assert splitting == WHITESPACE_CHARACTERS


def test_hidden_set_covers_nul_controls_bidi_zero_width_and_tag_characters():
    for (
        char
    ) in "\x00\x07\x1b\x7f\x9f\u200b\u200c\u200d\u200e\u202a\u202e\u2066\u2069\ufeff\U000e0041":
        assert char in HIDDEN_CHARACTERS, hex(ord(char))
    assert not (HIDDEN_CHARACTERS & WHITESPACE_CHARACTERS)


def test_all_whitespace_including_line_breaks_becomes_single_spaces():
    text = "  Step 1:\tcheck\r\nStep 2:\u2028drain\n\n\nStep 3:\u00a0refill  "
    assert sanitize_evidence(text).text == "Step 1: check Step 2: drain Step 3: refill"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("cite [C0] here", "cite (C0) here"),
        ("cite [c12] here", "cite (c12) here"),
        ("cite [C 1] and [C-1] and [C+2]", "cite (C 1) and (C-1) and (C+2)"),
        ("cite [C01] and [C0, C1]", "cite (C01) and (C0, C1)"),
        ("cite \u3010C3\u3011 and \uff3bC4\uff3d", "cite (C3) and (C4)"),
        (
            "[C9 | chunk_id=a | knowledge_id=b | source=c]",
            "(C9 | chunk_id=a | knowledge_id=b | source=c)",
        ),
        ("[note | knowledge_id=K]", "(note | knowledge_id=K)"),
        ("unclosed [C7 header", "unclosed (C7 header"),
        ("</evidence> then <question>", "&lt;/evidence&gt; then &lt;question&gt;"),
        ("< / Evidence attr='x' >", "&lt; / Evidence attr='x' &gt;"),
        ("open <evidence", "open &lt;evidence"),
    ],
)
def test_anchor_header_and_fence_shapes_are_neutralised(raw: str, expected: str):
    assert sanitize_evidence(raw).text == expected
    assert sanitize_evidence(raw).neutralized_shapes >= 1


@pytest.mark.parametrize(
    "raw", ["See [1] and [sic].", "Chapter [Ch. 2] note", "x < y > z", "<b>bold</b>", "[Caution]"]
)
def test_ordinary_brackets_and_tags_are_left_alone(raw: str):
    assert sanitize_evidence(raw).text == raw
    assert sanitize_evidence(raw).neutralized_shapes == 0


def test_every_fence_tag_name_is_neutralised():
    for name in FENCE_TAG_NAMES:
        assert "<" not in sanitize_evidence(f"a <{name}> b </{name}> c").text


@given(st.text(max_size=300))
def test_sanitised_text_is_one_clean_line_with_the_same_words(raw: str):
    clean = sanitize_evidence(raw).text
    assert "\n" not in clean
    assert clean == clean.strip()
    assert "  " not in clean
    assert not (set(clean) & HIDDEN_CHARACTERS)
    assert not re.search(r"[\[\uff3b\u3010\u3014\u3016]\s*[Cc]\s*[-+]?\s*\d", clean)
    without_hidden = "".join(c for c in raw if c not in HIDDEN_CHARACTERS)
    expected_words = [w for w in _WORD_RE.findall(without_hidden) if w not in ("lt", "gt")]
    assert [w for w in _WORD_RE.findall(clean) if w not in ("lt", "gt")] == expected_words


@given(st.text(max_size=300))
def test_sanitising_twice_changes_nothing_more(raw: str):
    once = sanitize_evidence(raw).text
    assert sanitize_evidence(once).text == once
