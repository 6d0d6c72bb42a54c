"""Coverage of a candidate's word shingles by an admitted chunk."""

from __future__ import annotations

import pytest

from groundlock.text.overlap import SHINGLE_CACHE, covered_fraction, shingles


def test_identical_texts_are_fully_covered_regardless_of_case_and_punctuation():
    a = shingles("Replace the seal every 500 hours.", 3)
    b = shingles("REPLACE the seal, every 500 hours!", 3)
    assert covered_fraction(a, b) == 1.0


def test_coverage_is_asymmetric_so_longer_text_is_not_lost():
    long_text = shingles("a b c d e f g h i j k l m n o p", 3)
    inner = shingles("f g h i", 3)
    assert covered_fraction(inner, long_text) == 1.0  # nothing new: a duplicate
    assert covered_fraction(long_text, inner) == 2 / 14  # mostly new: not a duplicate


def test_disjoint_and_empty_texts_are_not_covered():
    assert covered_fraction(shingles("a b c d", 3), shingles("w x y z", 3)) == 0.0
    assert covered_fraction(shingles("", 3), shingles("a b c", 3)) == 0.0
    assert shingles("...", 3) == frozenset()


def test_short_texts_form_one_shingle():
    assert shingles("Stop", 3) == frozenset(["stop"])


def test_half_shared_text_scores_between():
    fraction = covered_fraction(shingles("a b c d e f", 3), shingles("a b c d x y", 3))
    assert 0.0 < fraction < 1.0


@pytest.mark.slow
def test_shingle_cache_stays_within_its_memory_bound():
    SHINGLE_CACHE.clear()
    for seed in range(400):
        shingles(" ".join(f"w{seed}x{i}" for i in range(6000)), 3)
    info = SHINGLE_CACHE.info()
    assert 0 < info.weight <= 64 * 2**20
    assert info.entries < 400
