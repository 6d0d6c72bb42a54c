"""firewall_v2 on the labelled sets: tests/firewall/eval (tuning), heldout, review.

The issue's targets: at least 97 % of correct answers accepted, at least 90 % of wrong ones
rejected. The first holds on every set and is asserted. The second does not (about two
thirds on the tuning and review sets, under three fifths on the held-out one: a wrong
sentence that adds a claim without a new value, name or negation needs the optional support
judge); its floors here only keep a change from losing ground unnoticed. The review set is
an adversarial reviewer's cases; rules were tuned on its false rejects after it was first
measured, so it is no longer held out.
``benchmarks/firewall.py`` prints the figures per domain, kind of defect and rule.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from groundlock import ValidationStatus
from tests.firewall.eval.evalset import EVAL_DIR, HELDOUT_DIR, LABELS, REVIEW_DIR, judge_all

FLOORS = {EVAL_DIR: 0.66, HELDOUT_DIR: 0.58, REVIEW_DIR: 0.68}
"""Share of wrong answers rejected, as measured when firewall_v2 was frozen."""


@pytest.mark.parametrize(
    "directory", [EVAL_DIR, HELDOUT_DIR, REVIEW_DIR], ids=["eval", "heldout", "review"]
)
def test_correct_answers_pass_and_wrong_ones_are_rejected(directory: Path):
    judged = [(a, r) for _, a, r in judge_all("R2_POLICY_V2", directory) if not a.borderline]
    assert {a.label for a, _ in judged} == set(LABELS)
    correct = [r for a, r in judged if a.label == "correct"]
    wrong = [r for a, r in judged if a.label == "wrong"]
    accepted = sum(r.validation_status is ValidationStatus.PASSED for r in correct)
    rejected = sum(r.validation_status is ValidationStatus.FAILED for r in wrong)
    assert accepted >= 0.97 * len(correct), f"{accepted}/{len(correct)} correct accepted"
    assert rejected >= FLOORS[directory] * len(wrong), f"{rejected}/{len(wrong)} rejected"


def test_the_sets_are_large_and_broad_enough_to_mean_something():
    judged = judge_all("R2_POLICY_V2") + judge_all("R2_POLICY_V2", HELDOUT_DIR)
    assert len(judged) >= 800
    assert len({bundle.domain for bundle, _, _ in judged}) >= 6
    assert len({answer.kind for _, answer, _ in judged if answer.kind}) >= 18
