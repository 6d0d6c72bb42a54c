"""The firewall on the project's labelled sets: tests/firewall/eval (tuning), heldout, review,
broad (answers in the styles real models write) and numbers (number-dense evidence, answers of
one sentence: the precision of value binding).

Floors, not targets: each is the figure measured when the ruleset was frozen, rounded down, so
that a change losing ground fails here; ``benchmarks/firewall.py`` prints the figures per
subset, kind of defect and rule, and real model output (``../shared/data/real-dev``, read by
the benchmark only: third-party text never enters the tests) beside them.

firewall_v2 (R2_POLICY_V2) is held to what it was frozen with, except on the review set, whose
five answers with a frame that points at the evidence ("Based on the supplied material, ...")
were relabelled correct when firewall_v3 made such frames acceptable (issue 26): v2 still
rejects them as meta commentary. firewall_v3 (R2_POLICY_V3, the default) accepts at least 99 %
of the tuning set's correct answers; it rejects fewer of its wrong ones than v2 (66.5 % against
67.1 %) because the name rule only flags under it (its precision on real model output is 77 %:
a name a model adds from what it knows is often judged supported by people), which costs the
set's swapped and invented names; R2_POLICY_V3_STRICT enforces it (71.3 % rejected, 98.6 %
accepted).

The numbers set was added after the freeze: its floors are the figures measured then under
R2_POLICY_V3. It exists for rebound_value's false alarms, which the default policy only flags,
so almost none of its wrong answers (a value of the entry bound to another predicate) are
rejected there; ``benchmarks/firewall.py --set numbers`` prints the rule's precision.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from groundlock import ValidationStatus
from tests.firewall.eval.evalset import (
    BROAD_DIR,
    EVAL_DIR,
    HELDOUT_DIR,
    LABELS,
    NUMBERS_DIR,
    REVIEW_DIR,
    judge_all,
    load_all,
)

FLOORS: dict[tuple[str, Path], tuple[float, float]] = {
    # (policy, set): (share of correct answers accepted, share of wrong ones rejected)
    ("R2_POLICY_V2", EVAL_DIR): (0.99, 0.66),
    ("R2_POLICY_V2", HELDOUT_DIR): (0.97, 0.58),
    ("R2_POLICY_V2", REVIEW_DIR): (0.95, 0.68),
    ("R2_POLICY_V3", EVAL_DIR): (0.99, 0.66),
    ("R2_POLICY_V3", HELDOUT_DIR): (0.97, 0.53),
    ("R2_POLICY_V3", REVIEW_DIR): (0.97, 0.68),
    ("R2_POLICY_V3", BROAD_DIR): (0.93, 0.65),
    ("R2_POLICY_V3", NUMBERS_DIR): (0.98, 0.01),
    # The rule the numbers set measures, enforced: its false alarms and its reach.
    ("R2_POLICY_V3_STRICT", NUMBERS_DIR): (0.98, 0.25),
}
"""As measured when each ruleset was frozen (v3: 99.6 / 66.5, 97.2 / 53.7, 97.8 / 68.3,
93.4 / 65.6 %); numbers when it was added (98.9 / 1.4 %, and 98.9 / 26.8 % with
rebound_value enforced)."""


@pytest.mark.parametrize(
    ("policy", "directory"),
    list(FLOORS),
    ids=[f"{policy}-{directory.name}" for policy, directory in FLOORS],
)
@pytest.mark.slow
def test_correct_answers_pass_and_wrong_ones_are_rejected(policy: str, directory: Path):
    judged = [(a, r) for _, a, r in judge_all(policy, directory) if not a.borderline]
    assert {a.label for a, _ in judged} == set(LABELS)
    correct = [r for a, r in judged if a.label == "correct"]
    wrong = [r for a, r in judged if a.label == "wrong"]
    accepted = sum(r.validation_status is ValidationStatus.PASSED for r in correct)
    rejected = sum(r.validation_status is ValidationStatus.FAILED for r in wrong)
    accept_floor, reject_floor = FLOORS[(policy, directory)]
    assert accepted >= accept_floor * len(correct), f"{accepted}/{len(correct)} correct accepted"
    assert rejected >= reject_floor * len(wrong), f"{rejected}/{len(wrong)} rejected"


@pytest.mark.parametrize("directory", [EVAL_DIR, BROAD_DIR], ids=["eval", "broad"])
@pytest.mark.slow
def test_a_rejection_lands_on_the_sentence_made_wrong(directory: Path):
    """Of the wrong answers of several sentences rejected, the enforced finding is about the
    sentence the set marks wrong (measured: every rejection of the tuning and broad sets, one-
    sentence answers counted as on target). Not run on the numbers set: its wrong answers are
    all of one sentence, on target trivially."""
    on, off = 0, 0
    for _, answer, result in judge_all("R2_POLICY_V3", directory):
        finding = next((f for f in result.findings if f.mode == "enforce"), None)
        if answer.label != "wrong" or finding is None or not answer.wrong_sentence:
            continue
        if finding.sentence is None:
            off += 1
            continue
        raw = _sentence(answer.answer, finding.sentence)
        on += any(excerpt in raw for excerpt in answer.wrong_sentence)
        off += not any(excerpt in raw for excerpt in answer.wrong_sentence)
    assert on >= 0.95 * (on + off), f"{on} on target, {off} off"


def _sentence(text: str, number: int) -> str:
    """The ``number``-th sentence of ``text`` as R5 reads it (markers kept)."""
    from groundlock import load_policy  # noqa: PLC0415
    from groundlock.core.firewall.parsed import parse_answer  # noqa: PLC0415
    from groundlock.policies.ruleset import load_ruleset  # noqa: PLC0415

    ruleset = load_ruleset(load_policy("R2_POLICY_V3").firewall_ruleset)
    parsed = parse_answer(text, {}, ruleset.grammar.bound(()), ruleset.segmenter)
    return next((s.raw for s in parsed.sentences if s.number == number), "")


@pytest.mark.slow
def test_the_sets_are_large_and_broad_enough_to_mean_something():
    judged = judge_all("R2_POLICY_V2") + judge_all("R2_POLICY_V2", HELDOUT_DIR)
    assert len(judged) >= 800
    assert len({bundle.domain for bundle, _, _ in judged}) >= 6
    assert len({answer.kind for _, answer, _ in judged if answer.kind}) >= 18
    broad = [answer for bundle in load_all(BROAD_DIR) for answer in bundle.answers]
    assert len(broad) >= 300
    multi = [a for a in broad if a.label == "wrong" and a.wrong_sentence]
    assert len(multi) >= 100  # each marks the sentence it made wrong
    numbers = [answer for bundle in load_all(NUMBERS_DIR) for answer in bundle.answers]
    assert len(numbers) >= 400
    assert sum(a.kind == "rebound_value" for a in numbers) >= 130
    assert sum(a.label == "correct" and not a.borderline for a in numbers) >= 250
