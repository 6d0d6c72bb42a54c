"""The presets judge the translated evaluation sets as the default judges the originals.

Each preset (``[semantic_id]``, ``[CIT-NN]``, ``[Source: file, p.N]``) extends firewall_v2
with the same rules, so on the same evidence and the same answer, translated into its marker
style (``tests/firewall/eval/presets.py``), it should give the default's pass/fail verdict:
its grammar is the only difference, plus a word limit no answer of the sets reaches (the
longest has 148 words of the factual 150).

Measured when the presets were added, on all three sets (1,342 answers): 100.0 % agreement
for every preset and every set, with the same failure reason on every answer, and no correct
answer rejected for a grammar reason. The floor of 99 % leaves room for about one answer in a
hundred to change sides when a rule is retuned on the default's verdicts, not for a
grammar that misreads its own markers: that is held to zero separately.

Every answer of the sets is judged under every preset: none is untranslatable. (Three bundles,
whose evidence holds a square bracket followed by a long run of words, once sent the
``[semantic_id]`` grammar into exponential backtracking; the linear-time test below keeps
that fixed.)
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from groundlock import ValidationStatus, load_policy, validate_text
from groundlock.citations import SEMANTIC_ID
from tests.firewall.eval.evalset import EVAL_DIR, HELDOUT_DIR, REVIEW_DIR, load_all
from tests.firewall.eval.presets import (
    DEFAULT,
    PRESETS,
    judge_set,
    preset_bundle,
    translate_answer,
)

AGREEMENT_FLOOR = 0.99
"""Share of judged answers whose pass/fail verdict is the default's (measured: 100 %)."""
GRAMMAR_REASONS = {"MALFORMED_CITATION", "INVALID_CITATION_REFERENCE", "UNCITED_FACTUAL_STATEMENT"}
SETS = pytest.mark.parametrize(
    "directory", [EVAL_DIR, HELDOUT_DIR, REVIEW_DIR], ids=["eval", "heldout", "review"]
)
EACH_PRESET = pytest.mark.parametrize("policy", PRESETS)


@SETS
@EACH_PRESET
@pytest.mark.slow
def test_a_preset_gives_the_default_verdict_on_the_translated_set(policy: str, directory: Path):
    default = {j.answer.id: j.passed for j in judge_set(DEFAULT, directory)}
    judged = [j for j in judge_set(policy, directory) if j.result is not None]
    differing = [f"{j.answer.id}: {j.rule}" for j in judged if j.passed != default[j.answer.id]]
    assert len(judged) - len(differing) >= AGREEMENT_FLOOR * len(judged), differing


@pytest.mark.slow
@SETS
@EACH_PRESET
def test_no_correct_answer_the_default_accepts_fails_a_preset_s_grammar(policy, directory):
    default = {j.answer.id: j for j in judge_set(DEFAULT, directory)}
    grammar_rejects = [
        f"{j.answer.id}: {j.rule}: {j.translation.text[:120]!r}"
        for j in judge_set(policy, directory)
        if j.answer.label == "correct" and default[j.answer.id].passed and j.result is not None
        if j.result.failure_reason is not None and j.result.failure_reason.value in GRAMMAR_REASONS
    ]
    assert grammar_rejects == []


@SETS
@EACH_PRESET
def test_only_the_known_bundles_are_left_out(policy, directory):
    every = judge_set(policy, directory)
    left_out = {j.bundle.bundle_id for j in every if j.result is None}
    assert not [j.answer.id for j in every if j.skipped and j.skipped.startswith("untrans")]
    assert left_out == set()


@EACH_PRESET
def test_every_entry_of_a_translated_bundle_has_its_own_marker(policy):
    for directory in (EVAL_DIR, HELDOUT_DIR, REVIEW_DIR):
        for bundle in load_all(directory):
            rows = preset_bundle(bundle.retrieval_bundle(), policy)["results"]
            markers = translate_answer(
                "".join(f"[C{i}]" for i in range(len(rows))), rows, policy
            ).text
            assert len({r["semantic_id"] for r in rows}) == len(rows), bundle.bundle_id
            assert len({(r["source_file"], r["page"]) for r in rows}) == len(rows)
            assert markers.count("[") == len(rows), markers


def _tug_bundle_and_answer() -> tuple[dict, str]:
    bundle = next(b for b in load_all(EVAL_DIR) if b.bundle_id == "maint-tug-hydraulics")
    answer = next(a for a in bundle.answers if a.id == "tug-ok-01").answer
    assert answer.endswith("[C0]")
    return bundle.retrieval_bundle(), answer


@pytest.mark.parametrize(
    ("shape", "untranslatable_under"),
    [
        ("[c0]", ()),
        ("(C0)", ()),
        ("[C0, C1]", ()),
        ("[C0; C1]", ()),
        ("[C0-C2]", ()),
        ("[C 0]", ()),
        ("[C01]", ("SEMANTIC_ID_POLICY_V1", "SOURCE_PAGE_POLICY_V1")),
        ("\u3010C0\u3011", ()),
        ("{C0}", ()),
        ("C0]", ()),
        ("[\u04210]", ()),
        ("[Cn]", ()),
    ],
)
def test_a_malformed_marker_fails_every_preset_as_it_fails_the_default(shape, untranslatable_under):
    plain, answer = _tug_bundle_and_answer()
    text = answer.replace("[C0]", shape)
    assert validate_text(text, plain, DEFAULT).validation_status is ValidationStatus.FAILED
    for policy in PRESETS:
        request = preset_bundle(plain, policy)
        translation = translate_answer(text, request["results"], policy)
        if policy in untranslatable_under:
            assert translation.untranslatable, policy
            continue
        assert translation.untranslatable is None, policy
        assert "C0" not in translation.text, translation.text
        verdict = validate_text(translation.text, request, policy)
        assert verdict.validation_status is ValidationStatus.FAILED, translation.text


def test_the_refusal_and_an_answer_without_markers_translate_as_documented():
    plain, _ = _tug_bundle_and_answer()
    refusal = load_policy(DEFAULT).refusal_text
    unmarked = "The filter is replaced every 500 operating hours."
    for policy in PRESETS:
        request = preset_bundle(plain, policy)
        translated = translate_answer(refusal, request["results"], policy)
        assert translated.text == load_policy(policy).refusal_text
        default = validate_text(refusal, plain, DEFAULT)
        preset = validate_text(translated.text, request, policy)
        assert preset.validation_status is default.validation_status
        assert preset.generation_status is default.generation_status
        assert translate_answer(unmarked, request["results"], policy).text == unmarked
        assert translate_answer("NO_EVIDENCE: not here.", request["results"], policy).untranslatable


def _scan_time(size: int) -> float:
    """CPU seconds the grammar takes on ``size`` hostile brackets and a long unclosed word."""
    notice = "[Notice for all automated assistants reviewing this annex " * size + "x"
    times = []
    for _ in range(3):
        start = time.process_time()
        SEMANTIC_ID.neutralize(notice)
        SEMANTIC_ID.bound([]).scan(notice)
        SEMANTIC_ID.neutralize("[" + "a" * (400 * size) + " x")
        times.append(time.process_time() - start)
    return min(times)


def test_the_semantic_id_grammar_reads_an_unclosed_bracket_in_linear_time():
    """An optional separator between ids once made the shape test exponential (22 letters:
    0.9 s, 40: hours), in evidence (R2) and answers (R5) alike: a way to hang a server.

    Scaling, not a bound: twice the input takes less than three times as long (CPU time, the
    least of three runs; under 2 ms counts as 2 ms, the clock's grain)."""
    short, long = _scan_time(50), _scan_time(100)
    assert long / max(short, 0.002) < 3.0, f"{short:.4f} s, {long:.4f} s"
