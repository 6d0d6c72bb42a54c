"""The preset policies against the default on the translated evaluation sets, and R5's speed.

    python benchmarks/presets.py [--set eval|heldout|review|all] [--show] [--repeat N]

1. Accuracy and agreement. Every answer of ``tests/firewall/eval`` (and ``heldout``,
   ``review``) goes through R2, R3 and R5 (``validate_text``) under ``R2_POLICY_V2`` as
   written (``[C0]`` ...) and under each preset translated into its style
   (``tests/firewall/eval/presets.py``: rows gain a semantic id, citation label, document id,
   file and page; ``[Cn]`` becomes ``[AML_POL_04_0]``, ``[CIT-01]`` or ``[Source: file,
   p.N]``; the refusal becomes the preset's). Printed per set: the accept rate on correct
   answers and the reject rate on wrong ones (borderline answers apart, as in
   ``benchmarks/firewall.py``), the share of answers whose pass/fail verdict is the
   default's, the grammar rejects (malformed, invalid reference, uncited) of correct answers
   the default accepts, and what was not judged and why. ``--show`` lists every answer whose
   verdict differs from the default's, with the rule that fired on each side.
2. Speed. R5 alone (``validate_answer``) on one 20-row bundle's answer of five cited
   sentences, the same answer translated for each policy; the policies take turns call by
   call for ``--repeat`` rounds, so the medians and their ratio to the default's come from
   one run under the same conditions.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from firewall import _rate  # benchmarks/firewall.py: this script's directory is on sys.path

from groundlock import (
    Answered,
    LLMExecutionResult,
    ValidationStatus,
    assemble,
    build_prompt,
    load_policy,
    validate_answer,
)
from tests.builders import make_bundle, make_row
from tests.firewall.eval.evalset import EVAL_DIR, HELDOUT_DIR, REVIEW_DIR
from tests.firewall.eval.presets import (
    DEFAULT,
    PRESETS,
    Judged,
    judge_set,
    preset_bundle,
    translate_answer,
)

GRAMMAR_REASONS = frozenset(
    {"MALFORMED_CITATION", "INVALID_CITATION_REFERENCE", "UNCITED_FACTUAL_STATEMENT"}
)
"""What a preset rejects for its marker grammar, not for what the answer says."""
_SHORT = {
    DEFAULT: "default",
    "SEMANTIC_ID_POLICY_V1": "semantic_id",
    "CIT_LABEL_POLICY_V1": "cit_label",
    "SOURCE_PAGE_POLICY_V1": "source_page",
}


def _reason(judged: Judged) -> str | None:
    if judged.result is None or judged.result.failure_reason is None:
        return None
    return judged.result.failure_reason.value


def compare(directory: Path, *, show: bool) -> None:
    """One set: the table of every policy, then the disagreements with the default."""
    base = {j.answer.id: j for j in judge_set(DEFAULT, directory)}
    print(f"\n== {directory.name} set: {len(base)} answers ==")
    print(
        f"{'policy':<12} {'judged':>6} {'skipped':>7}  {'correct accepted':<22}"
        f" {'wrong rejected':<22} {'same verdict as default':<24} grammar rejects"
    )
    differing: list[tuple[str, Judged]] = []
    skipped: Counter[tuple[str, str]] = Counter()
    for policy in (DEFAULT, *PRESETS):
        every = judge_set(policy, directory)
        judged = [j for j in every if j.result is not None]
        scored = [j for j in judged if not j.answer.borderline]
        correct = [j for j in scored if j.answer.label == "correct"]
        wrong = [j for j in scored if j.answer.label == "wrong"]
        same = [j for j in judged if j.passed == base[j.answer.id].passed]
        grammar = [
            j
            for j in judged
            if j.answer.label == "correct" and base[j.answer.id].passed and not j.passed
            if _reason(j) in GRAMMAR_REASONS
        ]
        agreement = "-" if policy == DEFAULT else _rate(len(same), len(judged))
        print(
            f"{_SHORT[policy]:<12} {len(judged):>6} {len(every) - len(judged):>7}"
            f"  {_rate(sum(j.passed for j in correct), len(correct)):<22}"
            f" {_rate(sum(not j.passed for j in wrong), len(wrong)):<22} {agreement:<24}"
            f" {'-' if policy == DEFAULT else len(grammar)}"
        )
        differing += [(policy, j) for j in judged if j.passed != base[j.answer.id].passed]
        skipped.update((policy, j.skipped) for j in every if j.skipped)
    for (policy, why), count in sorted(skipped.items()):
        print(f"  not judged under {_SHORT[policy]}: {count} answers ({why})")
    by_rule = Counter((_SHORT[policy], j.rule) for policy, j in differing)
    for (policy, rule), count in sorted(by_rule.items()):
        print(f"  differs from the default under {policy}: {count} x {rule}")
    if show and differing:
        print("\nverdicts that differ from the default's:")
        for policy, j in differing:
            print(f"- {_SHORT[policy]} {j.answer.id} [{j.answer.label} {j.answer.kind or ''}]")
            print(f"    default: {base[j.answer.id].rule}; {_SHORT[policy]}: {j.rule}")
            print(f"    {j.translation.text[:300]!r}")


def _speed_case(policy: str) -> tuple[Answered, str]:
    """R4's state for the 20-row bundle's five-sentence answer, translated for ``policy``."""
    rows = [make_row(i) for i in range(20)]
    # 25 words of each of the first five chunks: 125 words, under every word limit.
    answer = "\n".join(
        " ".join(row["chunk_text"].split(":", 1)[1].split()[:25]) + f". [C{i}]"
        for i, row in enumerate(rows[:5])
    )
    bundle: dict[str, Any] = make_bundle(rows)
    if policy != DEFAULT:
        bundle = preset_bundle(bundle, policy)
        answer = translate_answer(answer, bundle["results"], policy).text
    loaded = load_policy(policy)
    state = build_prompt(assemble(bundle, loaded), loaded)
    return state.answered(LLMExecutionResult.uncalled(state.status, text=answer)), answer


def speed(repeat: int) -> None:
    """R5's median per policy, the policies taking turns call by call."""
    policies = (DEFAULT, *PRESETS)
    cases = {policy: _speed_case(policy) for policy in policies}
    loaded = {policy: load_policy(policy) for policy in policies}
    times: dict[str, list[float]] = {policy: [] for policy in policies}
    verdicts = {p: validate_answer(cases[p][0], loaded[p]) for p in policies}  # warm caches
    for _ in range(repeat):
        for policy in policies:
            start = time.perf_counter()
            validate_answer(cases[policy][0], loaded[policy])
            times[policy].append(time.perf_counter() - start)
    print(f"\nR5 alone, 20-row bundle, 5 cited sentences (125 words), median of {repeat}:")
    print(f"  {'policy':<12} {'median':>10} {'ratio':>7}  verdict  first line of the answer")
    reference = statistics.median(times[DEFAULT])
    for policy in policies:
        median = statistics.median(times[policy])
        status = verdicts[policy].validation_status
        mark = "PASSED" if status is ValidationStatus.PASSED else status.value
        print(
            f"  {_SHORT[policy]:<12} {1e6 * median:8.1f} us {median / reference:6.2f}x  {mark:<7}"
            f"  ...{cases[policy][1].splitlines()[0][-50:]}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", action="store_true", help="list the differing verdicts")
    parser.add_argument(
        "--set", choices=["eval", "heldout", "review", "all"], default="all", help="labelled set"
    )
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()
    sets = {"eval": [EVAL_DIR], "heldout": [HELDOUT_DIR], "review": [REVIEW_DIR]}
    for directory in sets.get(args.set, [EVAL_DIR, HELDOUT_DIR, REVIEW_DIR]):
        compare(directory, show=args.show)
    speed(args.repeat)


if __name__ == "__main__":
    main()
