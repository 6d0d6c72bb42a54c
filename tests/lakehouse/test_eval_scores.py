"""003's relevance and compliance scores, each checked against values computed by hand."""

from __future__ import annotations

import pytest

from groundlock.lakehouse.eval_scores import (
    compliance,
    content_words,
    lcs_length,
    relevance,
    rouge_l,
    source_of,
    token_f1,
)

# -- content words --------------------------------------------------------------------------


def test_markers_of_every_preset_are_not_content():
    answer = "Grease it [C0] [CIT-01] [PenalCode_420_0] [Source: crane-slew-bearing.md, p.1] daily."
    assert content_words(answer) == ["grease", "daily"]


def test_case_width_and_stopwords_fold_away_but_negations_stay():
    # "The", "is", "to", "be" are stopwords; NOT stays; full-width N and m (NFKC) fold to nm.
    assert content_words("The bolt is NOT to be torqued past 45 \uff2e\uff4d.") == [
        "bolt", "not", "torqued", "past", "45", "nm",
    ]  # fmt: skip


def test_numbers_keep_their_separators_and_other_marks_split():
    assert content_words("1,250 Nm; 2.5 bar; FR-2026-017; tug7_hpu") == [
        "1,250", "nm", "2.5", "bar", "fr", "2026", "017", "tug7", "hpu",
    ]  # fmt: skip


def test_a_long_bracket_is_text_not_a_marker():
    inside = "x " * 200  # 400 characters: longer than any marker
    assert content_words(f"[{inside}]").count("x") == 200


# -- the two overlaps -------------------------------------------------------------------------


def test_lcs_of_three_words():
    # a b c against a c b: "a b" and "a c" are common subsequences of length 2, none of 3.
    assert lcs_length(["a", "b", "c"], ["a", "c", "b"]) == 2
    assert lcs_length(["a", "c", "b"], ["a", "b", "c"]) == 2
    assert lcs_length(["x", "a", "y", "b"], ["a", "b"]) == 2
    assert lcs_length([], ["a"]) == 0


def test_rouge_l_is_the_f_measure_of_the_lcs():
    # LCS 2; P = 2/3, R = 2/3, F = 2/3.
    assert rouge_l(["a", "b", "c"], ["a", "c", "b"]) == pytest.approx(2 / 3)
    # answer of 4 words, gold of 2, LCS 2: P = 1/2, R = 1, F = 2 * 1/2 / (3/2) = 2/3.
    assert rouge_l(["x", "a", "y", "b"], ["a", "b"]) == pytest.approx(2 / 3)
    assert rouge_l(["b", "a"], ["a", "b"]) == pytest.approx(1 / 2)  # LCS 1 of 2 and 2
    assert rouge_l([], ["a"]) == 0.0


def test_token_f1_counts_a_bag_not_an_order():
    assert token_f1(["b", "a"], ["a", "b"]) == 1.0  # ROUGE-L says 0.5 for the same pair
    # answer a a b, gold a b b: overlap min(2,1) + min(1,2) = 2; P = R = 2/3.
    assert token_f1(["a", "a", "b"], ["a", "b", "b"]) == pytest.approx(2 / 3)
    assert token_f1(["x"], ["a"]) == 0.0


def test_relevance_of_an_answer_to_its_gold_by_hand():
    gold = "Every 500 operating hours, or earlier if the gauge reads above 2 bar at idle."
    answer = "The case drain filter is replaced every 500 operating hours. [C0]"
    # gold words: every 500 operating hours earlier gauge reads 2 bar idle (10)
    # answer words: case drain filter replaced every 500 operating hours (8)
    # shared: every 500 operating hours (4), in the same order in both.
    f1, rouge = relevance(answer, gold, status="OK", answerable=True)
    precision, recall = 4 / 8, 4 / 10
    assert f1 == pytest.approx(2 * precision * recall / (precision + recall))
    assert rouge == pytest.approx(2 * precision * recall / (precision + recall))


def test_relevance_is_none_without_a_gold_and_zero_for_a_non_answer():
    assert relevance("x", None, status="OK", answerable=True) == (None, None)
    assert relevance("x", "y", status="NO_EVIDENCE", answerable=False) == (None, None)
    assert relevance("x", "The [C0].", status="OK", answerable=True) == (None, None)
    refusal = "The provided evidence does not answer the filter question."
    assert relevance(refusal, "filter", status="NO_EVIDENCE", answerable=True) == (0.0, 0.0)
    assert relevance("", "filter", status="FAILED", answerable=True) == (0.0, 0.0)


# -- compliance -------------------------------------------------------------------------------


def test_the_source_of_a_chunk_is_its_document():
    assert source_of("docs/crane.md#2") == "docs/crane.md"
    assert source_of("manual.pdf#p3.1") == "manual.pdf"
    assert source_of("chunk-000") == "chunk-000"


def test_compliance_of_each_outcome():
    expected = ("crane.md#2",)
    assert compliance("FAILED", (), expected, answerable=True) == 0.0
    assert compliance("FAILED", (), (), answerable=False) == 0.0
    # a refusal is compliant, right (unanswerable) or wrong (answerable) as a decision
    assert compliance("NO_EVIDENCE", (), (), answerable=False) == 1.0
    assert compliance("NO_EVIDENCE", (), expected, answerable=True) == 1.0
    # OK: another paragraph of the expected document is compliant, another document is not
    assert compliance("OK", ("crane.md#2",), expected, answerable=True) == 1.0
    assert compliance("OK", ("crane.md#1",), expected, answerable=True) == 1.0
    cited = ("crane.md#1", "draft.md#1", "pump.md#1")
    assert compliance("OK", cited, expected, answerable=True) == pytest.approx(1 / 3)
    assert compliance("OK", (), expected, answerable=True) == 0.0
    # no expected sources: an answer to an unanswerable item is not compliant
    assert compliance("OK", ("x.md#1",), (), answerable=False) == 0.0
    assert compliance("OK", ("x.md#1",), (), answerable=True) == 1.0
