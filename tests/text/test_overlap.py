"""Overlap coefficient over word shingles: containment counts as duplication."""

from __future__ import annotations

from groundlock.text.overlap import overlap_ratio, shingles


def test_identical_texts_overlap_fully_regardless_of_case_and_punctuation():
    a = shingles("Replace the seal every 500 hours.", 3)
    b = shingles("REPLACE the seal, every 500 hours!", 3)
    assert overlap_ratio(a, b) == 1.0


def test_contained_text_overlaps_fully_even_though_jaccard_would_be_low():
    long_text = shingles("a b c d e f g h i j k l m n o p", 3)
    inner = shingles("f g h i", 3)
    assert overlap_ratio(inner, long_text) == overlap_ratio(long_text, inner) == 1.0


def test_disjoint_and_empty_texts_do_not_overlap():
    assert overlap_ratio(shingles("a b c d", 3), shingles("w x y z", 3)) == 0.0
    assert overlap_ratio(shingles("", 3), shingles("a b c", 3)) == 0.0
    assert shingles("...", 3) == frozenset()


def test_short_texts_form_one_shingle():
    assert shingles("Stop", 3) == frozenset(["stop"])


def test_half_shared_text_scores_between():
    ratio = overlap_ratio(shingles("a b c d e f", 3), shingles("a b c d x y", 3))
    assert 0.0 < ratio < 1.0
