"""R5's accuracy on the labelled evaluation set, and its speed at 20 rows.

    python benchmarks/firewall.py [--policy NAME ...] [--show] [--repeat N]

1. Accuracy. Every answer of ``tests/firewall/eval`` (hand-written bundles in maintenance,
   legal, compliance and general domains; correct answers in the styles real models write,
   wrong ones with one subtle defect of a named kind) goes through R2-R5 under each policy.
   Printed: the accept rate on correct answers and the reject rate on wrong ones, overall,
   per domain and per kind of defect; which rule rejected what (and which rules rejected
   correct answers); borderline answers apart. Targets (issue 14): at least 97 % of correct
   answers accepted, at least 90 % of wrong ones rejected, every changed value rejected.
2. Speed. R5 alone (``validate_answer``) on a 20-row bundle's answer of five cited sentences,
   median over ``--repeat`` calls, for each policy: the ruleset's cost, side by side.

``--show`` lists every misjudged answer with the rule that fired, for tuning; tune on the
set as a whole, never on one answer.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from groundlock import (
    AssembleEvidence,
    BuildPrompt,
    ExecuteModel,
    ValidationStatus,
    available_policies,
    load_policy,
    validate_answer,
)
from tests.builders import make_bundle, make_row
from tests.fakes.chat import ScriptedChatModel
from tests.firewall.eval.evalset import EVAL_DIR, HELDOUT_DIR, REVIEW_DIR, judge_all


def _rate(hits: int, total: int) -> str:
    return f"{100 * hits / total:5.1f} % ({hits}/{total})" if total else "    -"


def accuracy(policy: str, *, show: bool, directory: Path = EVAL_DIR) -> None:
    judged = judge_all(policy, directory)
    scored = [(b, a, r) for b, a, r in judged if not a.borderline]
    passed = lambda r: r.validation_status is ValidationStatus.PASSED  # noqa: E731
    correct = [(b, a, r) for b, a, r in scored if a.label == "correct"]
    wrong = [(b, a, r) for b, a, r in scored if a.label == "wrong"]
    accepted = sum(passed(r) for _, _, r in correct)
    rejected = sum(not passed(r) for _, _, r in wrong)
    print(f"\n== {policy} (ruleset {judged[0][2].firewall_ruleset}), {directory.name} set ==")
    print(f"correct answers accepted: {_rate(accepted, len(correct))}")
    print(f"wrong answers rejected:   {_rate(rejected, len(wrong))}")
    print("\nper domain              accepted correct        rejected wrong")
    for domain in sorted({b.domain for b, _, _ in scored}):
        c = [r for b, _, r in correct if b.domain == domain]
        w = [r for b, _, r in wrong if b.domain == domain]
        print(
            f"  {domain:<20} {_rate(sum(map(passed, c)), len(c)):<22}"
            f" {_rate(sum(not passed(r) for r in w), len(w))}"
        )
    print("\nper kind of defect      rejected")
    for kind in sorted({a.kind for _, a, _ in wrong if a.kind}):
        w = [r for _, a, r in wrong if a.kind == kind]
        print(f"  {kind:<27} {_rate(sum(not passed(r) for r in w), len(w))}")
    by_rule: dict[str, Counter[str]] = defaultdict(Counter)
    for _, a, r in scored:
        if not passed(r):
            rule = next(f.rule for f in r.findings if f.mode == "enforce") if r.findings else "-"
            by_rule[rule][a.label] += 1
    flagged: Counter[str] = Counter(
        f.rule for _, _, r in scored for f in r.findings if f.mode == "flag"
    )
    print("\nper rule (first enforced finding)   rejects wrong   rejects correct")
    for rule, counts in sorted(by_rule.items(), key=lambda item: -item[1]["wrong"]):
        print(f"  {rule:<33} {counts['wrong']:>13} {counts['correct']:>17}")
    for rule, count in flagged.items():
        print(f"  flagged only: {rule:<20} {count} findings")
    border = [(a, r) for _, a, r in judged if a.borderline]
    if border:
        kept = sum(passed(r) for _, r in border)
        print(f"\nborderline answers (not scored): {len(border)}, accepted {kept}")
    if show:
        print("\nmisjudged:")
        for _, a, r in correct + wrong:
            if passed(r) != (a.label == "correct"):
                finding = next((f for f in r.findings if f.mode == "enforce"), None)
                why = f"{finding.rule}: {finding.message}" if finding else "accepted"
                print(f"- {a.id} [{a.label} {a.kind or a.style or ''}] {why}")
                print(f"    {a.answer[:300]!r}")
                if a.note:
                    print(f"    note: {a.note[:200]}")


def speed(policies: list[str], repeat: int) -> None:
    rows = [make_row(i) for i in range(20)]
    answer = "\n".join(
        f"{row['chunk_text'].split(':', 1)[1].strip()} [C{i}]" for i, row in enumerate(rows[:5])
    )
    print(f"\nR5 alone, 20-row bundle, 5 cited sentences, median of {repeat}:")
    for name in policies:
        policy = load_policy(name)
        prompt = (AssembleEvidence(policy=policy) | BuildPrompt(policy=policy)).invoke(
            make_bundle(rows)
        )
        execution = ExecuteModel(model=ScriptedChatModel(text=answer), policy=policy).invoke(prompt)
        validate_answer(execution, policy)  # warm the caches
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            validate_answer(execution, policy)
            times.append(time.perf_counter() - start)
        print(f"  {name:<16} {1e6 * statistics.median(times):8.1f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", action="append", choices=available_policies())
    parser.add_argument("--show", action="store_true")
    parser.add_argument(
        "--set", choices=["eval", "heldout", "review", "all"], default="all", help="labelled set"
    )
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()
    policies = args.policy or available_policies()
    sets = {
        "eval": [EVAL_DIR],
        "heldout": [HELDOUT_DIR],
        "review": [REVIEW_DIR],
        "all": [EVAL_DIR, HELDOUT_DIR, REVIEW_DIR],
    }
    for directory in sets[args.set]:
        for policy in policies:
            accuracy(policy, show=args.show, directory=directory)
    speed(policies, args.repeat)


if __name__ == "__main__":
    main()
