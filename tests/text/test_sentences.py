"""Sentence segmentation shared by the validator and the extractive model (DESIGN.md R5.5)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from groundlock.text.sentences import split_sentences


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("Check it. Replace it? Yes! Done", ["Check it.", "Replace it?", "Yes!", "Done"]),
        ("First line\nSecond line", ["First line", "Second line"]),
        ("Keep 3.5 bar. Then stop.", ["Keep 3.5 bar.", "Then stop."]),
        ("Use seal kit v1.2 only. Done.", ["Use seal kit v1.2 only.", "Done."]),
        ("Wait... then drain. Done…", ["Wait... then drain.", "Done…"]),
        ("Use a tool, e.g. a torque wrench. Done.", ["Use a tool, e.g. a torque wrench.", "Done."]),
        ("That is, i.e. the pump. Done.", ["That is, i.e. the pump.", "Done."]),
        ("See No. 4 for details. Done.", ["See No. 4 for details.", "Done."]),
        ("Apply Sec. 2 rules. Done.", ["Apply Sec. 2 rules.", "Done."]),
        ("Torque approx. 45 Nm. Done.", ["Torque approx. 45 Nm.", "Done."]),
        ("Meets U.S. rules. Done.", ["Meets U.S. rules.", "Done."]),
        ("Ask Dr. Lee. Done.", ["Ask Dr. Lee.", "Done."]),
        ("Drain monthly. [C0] Refill. [C1][C2]", ["Drain monthly. [C0]", "Refill. [C1][C2]"]),
        ("- item one\n* item two\n1. item three\n2) item four",
         ["item one", "item two", "item three", "item four"]),
        ("Heading\n\n\nBody text.", ["Heading", "Body text."]),
    ],
    ids=["marks", "line breaks", "decimal", "version", "ellipsis", "e.g.", "i.e.", "No. 4",
         "Sec. 2", "approx.", "U.S.", "Dr.", "trailing anchors", "list markers", "blank lines"],
)  # fmt: skip
def test_segmentation_rules(text: str, sentences: list[str]):
    assert split_sentences(text) == sentences


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("It is cracked? No. Replace it.", ["It is cracked?", "No.", "Replace it."]),
        ("Built in the U.S. The Navy uses it.", ["Built in the U.S.", "The Navy uses it."]),
        ("Plan B. Then stop.", ["Plan B.", "Then stop."]),
    ],
)
def test_an_abbreviation_out_of_its_context_still_ends_the_sentence(text, sentences):
    # Splitting is the safe side: a wrong merge could let an uncited sentence hide in a cited one.
    assert split_sentences(text) == sentences


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("Drain it.[C0]The pump runs dry. [C1]", ["Drain it.[C0]", "The pump runs dry. [C1]"]),
        ("Drain it![C0][C1]Refill it.", ["Drain it![C0][C1]", "Refill it."]),
        ("Run it for 10 min. 25 Nm is the torque.", ["Run it for 10 min.", "25 Nm is the torque."]),
        ("Drain it\u203c The pump runs dry.", ["Drain it\u203c", "The pump runs dry."]),
        ("Drain it\u203dThe pump", ["Drain it\u203d", "The pump"]),
        ("Drain it\uff61The pump", ["Drain it\uff61", "The pump"]),
        ("Drain it\ufe57The pump", ["Drain it\ufe57", "The pump"]),
        ("Drain it\u0964The pump", ["Drain it\u0964", "The pump"]),
        ("Drain it\u06d4The pump", ["Drain it\u06d4", "The pump"]),
        ("Drain it\u061fThe pump", ["Drain it\u061f", "The pump"]),
        ("Drain it.\u201c The pump runs dry.", ["Drain it.\u201c", "The pump runs dry."]),
        ("Drain it.\u300d The pump runs dry.", ["Drain it.\u300d", "The pump runs dry."]),
        ("Drain it.\u203a The pump runs dry.", ["Drain it.\u203a", "The pump runs dry."]),
        ("Drain it.\uff09 The pump runs dry.", ["Drain it.\uff09", "The pump runs dry."]),
        ("Drain it, e.g.[C0] The pump.", ["Drain it, e.g.[C0]", "The pump."]),
    ],
    ids=["anchor glued", "two anchors glued", "minutes before a number", "double exclamation",
         "interrobang", "halfwidth stop", "small exclamation", "danda", "arabic stop",
         "arabic question", "left double quote closing", "corner bracket", "single guillemet",
         "fullwidth paren", "abbreviation before an anchor"],
)  # fmt: skip
def test_no_uncited_sentence_rides_on_a_cited_one(text: str, sentences: list[str]):
    # Each of these hid a second sentence inside the first, so one anchor covered both.
    assert split_sentences(text) == sentences


@pytest.mark.parametrize(
    "text",
    ["Torque the bolts to max. 45 Nm.", "Contact J.Smith today.", "Load ENGINE.BIN now.",
     "Fit NAS1149.FN and AN960.PD10 washers.", "Use config.XML and System.IO."],
)  # fmt: skip
def test_a_limit_an_initial_or_a_file_name_does_not_end_a_sentence(text: str):
    assert split_sentences(text) == [text]


def _is_subsequence(small: str, large: str) -> bool:
    remaining = iter(large)
    return all(ch in remaining for ch in small)


@given(st.text(max_size=200))
def test_sentences_add_nothing_keep_order_and_hold_no_line_breaks(text: str):
    sentences = split_sentences(text)
    assert all(s and s == s.strip() and "\n" not in s for s in sentences)
    kept = "".join(ch for ch in "".join(sentences) if not ch.isspace())
    assert _is_subsequence(kept, "".join(ch for ch in text if not ch.isspace()))
