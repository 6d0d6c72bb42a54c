"""R5's accuracy on real model output and on the project's own sets, per rule; and its speed.

    python benchmarks/firewall.py [--policy NAME ...] [--set NAME ...] [--show]
                                  [--judge MODULE:CALLABLE] [--real-dev PATH] [--repeat N]

1. Accuracy. Every answer of every labelled set goes through R2, R3 and R5 under each
   policy (R5 judges the text in R4's place, as ``validate_text`` does):

   * ``real-dev``: 617 real answer claims written by LLMs and generative search engines,
     labelled by people (``../shared/data/real-dev``, third-party text read from there and
     never copied into this repository; skipped, with a note, where it is absent);
   * the project's own hand-written sets in ``tests/firewall``: ``eval`` (the tuning set),
     ``heldout`` (never tuned on), ``review`` (an adversarial review's cases), ``broad``
     (answers in the styles real models write, with the classes real output showed) and
     ``numbers`` (number-dense evidence, answers of one sentence: the precision of value
     binding, ``rebound_value``'s false alarms among them).

   Printed per set: the accept rate on correct (SUPPORTED) answers and the reject rate on
   wrong (UNSUPPORTED) ones, overall, per subset and per kind of defect; per rule, how many
   answers it rejects *first* (its finding is the first enforced one), how many of those
   are correct (its false alarms) and its precision, and how many answers it *fires on* in
   any mode with the precision it would have if it enforced alone (the figure the default
   policy's modes are set from); and the **on-target rate**: of the wrong answers
   rejected, the share whose enforced finding is about the sentence the set marks wrong
   (``wrong_sentence``; an answer of one sentence is on target trivially, a finding about
   the whole answer of several sentences is counted apart).
2. ``--judge MODULE:CALLABLE``: the same tables for ``R2_POLICY_V3_JUDGED`` (the default
   policy with a support judge after the rules), with the judge ``CALLABLE()`` returns: any
   Runnable mapping ``{"sentence", "evidence"}`` to ``{"verdict", "score"}``, or a chat
   model (pinned, given the frozen judge prompt). See the README for two recipes.
3. Speed. R5 alone on a 20-row bundle's answer of five cited sentences, median over
   ``--repeat`` calls, per policy; and answers judged per CPU-second over real-dev.

``--show`` lists every misjudged answer with the rule that fired, for tuning; tune on the
sets as a whole, never on one answer.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from groundlock import (  # noqa: E402
    AssembleEvidence,
    BuildPrompt,
    ExecuteModel,
    GenerationStatus,
    LLMExecutionResult,
    Policy,
    ValidateAnswer,
    ValidationResult,
    ValidationStatus,
    assemble,
    available_policies,
    build_prompt,
    load_policy,
    validate_answer,
)
from groundlock.contracts.validation import FirewallFinding  # noqa: E402
from groundlock.core.firewall.parsed import parse_answer  # noqa: E402
from groundlock.policies.ruleset import load_ruleset  # noqa: E402
from tests.builders import make_bundle, make_row  # noqa: E402
from tests.fakes.chat import ScriptedChatModel  # noqa: E402
from tests.firewall.eval.evalset import (  # noqa: E402
    BROAD_DIR,
    EVAL_DIR,
    HELDOUT_DIR,
    NUMBERS_DIR,
    REVIEW_DIR,
    load_all,
)

REAL_DEV = ROOT.parent / "shared" / "data" / "real-dev" / "items.jsonl"
"""Where the real answers are read from (a checkout beside ``../shared``)."""
OWN_SETS = {
    "eval": EVAL_DIR,
    "heldout": HELDOUT_DIR,
    "review": REVIEW_DIR,
    "broad": BROAD_DIR,
    "numbers": NUMBERS_DIR,
}
DEFAULT_POLICIES = ("R2_POLICY_V2", "R2_POLICY_V3", "R2_POLICY_V3_STRICT")
JUDGED_POLICY = "R2_POLICY_V3_JUDGED"


@dataclass(frozen=True)
class Case:
    """One labelled answer of one set, with the bundle it replies to."""

    set: str
    group: str
    """A subset: the domain of an own set, the source dataset of real-dev."""
    id: str
    correct: bool
    kind: str | None
    answer: str
    bundle: str
    """Key of the bundle in the run's bundle table."""
    wrong_sentence: tuple[str, ...] = ()
    borderline: bool = False


@dataclass(frozen=True)
class Judged:
    """A case and R5's verdict on it."""

    case: Case
    result: ValidationResult
    sentences: dict[int, str]
    """The answer's sentences as R5 numbered them (for the on-target rate)."""

    @property
    def accepted(self) -> bool:
        return (
            self.result.validation_status is ValidationStatus.PASSED
            and self.result.generation_status is not GenerationStatus.FAILED
        )

    @property
    def enforced(self) -> FirewallFinding | None:
        return next((f for f in self.result.findings if f.mode == "enforce"), None)


def own_cases(name: str, bundles: dict[str, dict[str, Any]]) -> list[Case]:
    """The cases of one of the project's own sets (empty if the set does not exist)."""
    directory = OWN_SETS[name]
    cases = []
    for bundle in load_all(directory) if directory.is_dir() else []:
        key = f"{name}/{bundle.bundle_id}"
        bundles[key] = bundle.retrieval_bundle()
        cases.extend(
            Case(
                set=name,
                group=bundle.domain,
                id=answer.id,
                correct=answer.label == "correct",
                kind=answer.kind,
                answer=answer.answer,
                bundle=key,
                wrong_sentence=answer.wrong_sentence,
                borderline=answer.borderline,
            )
            for answer in bundle.answers
        )
    return cases


def real_dev_cases(path: Path, bundles: dict[str, dict[str, Any]]) -> list[Case]:
    """The real-dev items, read where they lie (never copied)."""
    cases = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        key = f"real-dev/{item['id']}"
        bundles[key] = item["bundle"]
        cases.append(
            Case(
                set="real-dev",
                group=item["source"]["subset"],
                id=item["id"],
                correct=item["label"] == "SUPPORTED",
                kind=None,
                answer=item["answer"],
                bundle=key,
            )
        )
    return cases


def judge_cases(
    cases: Sequence[Case],
    bundles: dict[str, dict[str, Any]],
    policy: Policy,
    judge: object = None,
) -> list[Judged]:
    """R5's verdict on every case under ``policy`` (R2 and R3 once per bundle)."""
    ruleset = load_ruleset(policy.firewall_ruleset)
    stage = ValidateAnswer(policy=policy, judge=judge) if judge is not None else None
    states: dict[str, Any] = {}
    judged = []
    for case in cases:
        state = states.get(case.bundle)
        if state is None:
            state = states[case.bundle] = build_prompt(
                assemble(bundles[case.bundle], policy), policy
            )
        execution = LLMExecutionResult.uncalled(state.status, text=case.answer)
        answered = state.answered(execution)
        if stage is not None:
            result = stage.invoke(answered).validation
        else:
            result = validate_answer(answered, policy)
        entries = {e.anchor: e for e in state.bundle.selected_evidence}
        grammar = ruleset.grammar.bound(state.bundle.selected_evidence)
        parsed = parse_answer(case.answer, entries, grammar, ruleset.segmenter)
        judged.append(Judged(case, result, {s.number: s.raw for s in parsed.sentences}))
    return judged


def _rate(hits: int, total: int) -> str:
    return f"{100 * hits / total:5.1f} % ({hits}/{total})" if total else "    -"


def _precision(right: int, total: int) -> str:
    return f"{100 * right / total:5.1f} %" if total else "    -"


def report(title: str, judged: list[Judged], *, show: bool) -> dict[str, Any]:
    """Print one set's tables under one policy; return its headline figures."""
    scored = [j for j in judged if not j.case.borderline]
    correct = [j for j in scored if j.case.correct]
    wrong = [j for j in scored if not j.case.correct]
    accepted = sum(j.accepted for j in correct)
    rejected = sum(not j.accepted for j in wrong)
    print(f"\n== {title} ==")
    print(f"correct answers accepted: {_rate(accepted, len(correct))}")
    print(f"wrong answers rejected:   {_rate(rejected, len(wrong))}")
    groups = sorted({j.case.group for j in scored})
    if len(groups) > 1:
        print("\nper subset              accepted correct        rejected wrong")
        for group in groups:
            c = [j for j in correct if j.case.group == group]
            w = [j for j in wrong if j.case.group == group]
            print(
                f"  {group:<20} {_rate(sum(j.accepted for j in c), len(c)):<22}"
                f" {_rate(sum(not j.accepted for j in w), len(w))}"
            )
    kinds = sorted({j.case.kind for j in wrong if j.case.kind})
    if kinds:
        print("\nper kind of defect      rejected")
        for kind in kinds:
            w = [j for j in wrong if j.case.kind == kind]
            print(f"  {kind:<27} {_rate(sum(not j.accepted for j in w), len(w))}")
    _rules(scored)
    on_target = _on_target(wrong)
    border = [j for j in judged if j.case.borderline]
    if border:
        kept = sum(j.accepted for j in border)
        print(f"\nborderline answers (not scored): {len(border)}, accepted {kept}")
    if show:
        _show(correct + wrong)
    return {
        "accept": accepted / len(correct) if correct else None,
        "reject": rejected / len(wrong) if wrong else None,
        "on_target": on_target,
    }


def _rules(scored: list[Judged]) -> None:
    first: dict[str, Counter[bool]] = defaultdict(Counter)
    fires: dict[str, Counter[bool]] = defaultdict(Counter)
    modes: dict[str, str] = {}
    for j in scored:
        if j.enforced is not None:
            first[j.enforced.rule][j.case.correct] += 1
        for rule in {f.rule for f in j.result.findings}:
            fires[rule][j.case.correct] += 1
        for f in j.result.findings:
            modes[f.rule] = f.mode
    print(
        "\nper rule                     mode    | rejects first  of them  precision"
        " | fires on  of them  precision"
    )
    print(
        "                                     |               correct            "
        " | (any mode) correct  if enforced"
    )
    for rule in sorted(fires.keys() | first.keys(), key=lambda r: -sum(fires[r].values())):
        f, a = first[rule], fires[rule]
        print(
            f"  {rule:<26} {modes.get(rule, '-'):<7} | {sum(f.values()):>13} {f[True]:>8}"
            f"  {_precision(f[False], sum(f.values())):>9} | {sum(a.values()):>8} {a[True]:>8}"
            f"  {_precision(a[False], sum(a.values())):>9}"
        )


def _on_target(wrong: list[Judged]) -> float | None:
    rejected = [j for j in wrong if not j.accepted]
    hit = whole = off = 0
    single = 0
    for j in rejected:
        finding = j.enforced
        if len(j.sentences) <= 1:
            single += 1
            hit += 1
        elif not j.case.wrong_sentence:
            continue  # not marked: cannot say
        elif finding is None or finding.sentence is None:
            whole += 1
        elif any(e in j.sentences.get(finding.sentence, "") for e in j.case.wrong_sentence):
            hit += 1
        else:
            off += 1
    counted = hit + whole + off
    multi = counted - single
    print(
        f"\non target: {_rate(hit, counted)} of the rejected wrong answers"
        f" ({single} of one sentence; of {multi} of several: {hit - single} on the marked"
        f" sentence, {off} on another, {whole} about the whole answer)"
    )
    return hit / counted if counted else None


def _show(judged: Iterable[Judged]) -> None:
    print("\nmisjudged:")
    for j in judged:
        if j.accepted == j.case.correct:
            continue
        f = j.enforced
        why = f"{f.rule}: {f.message}" if f else ("accepted" if j.accepted else j.result.message)
        label = "correct" if j.case.correct else f"wrong {j.case.kind or ''}"
        print(f"- {j.case.id} [{label}] {why}")
        print(f"    {j.case.answer[:300]!r}")


def speed(policies: Sequence[str], repeat: int, real: list[Case], bundles: dict[str, Any]) -> None:
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
        print(f"  {name:<20} {1e6 * statistics.median(times):8.1f} us")
    if real:
        print(
            f"\nreal-dev, {len(real)} answers judged (R2, R3 once per bundle, R5), per CPU-second:"
        )
        for name in policies:
            policy = load_policy(name)
            judge_cases(real, bundles, policy)  # warm
            start = time.process_time()
            judge_cases(real, bundles, policy)
            spent = time.process_time() - start
            print(f"  {name:<20} {len(real) / spent:8.0f} answers/s")


def _load_judge(spec: str) -> object:
    module, _, name = spec.partition(":")
    if not module or not name:
        raise SystemExit(f"--judge takes MODULE:CALLABLE, not {spec!r}")
    factory: Callable[[], object] = getattr(importlib.import_module(module), name)
    return factory()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", action="append", choices=available_policies())
    parser.add_argument(
        "--set", action="append", choices=["real-dev", *OWN_SETS], help="labelled set(s)"
    )
    parser.add_argument("--show", action="store_true", help="list the misjudged answers")
    parser.add_argument("--judge", metavar="MODULE:CALLABLE", help="add a support judge")
    parser.add_argument("--real-dev", type=Path, default=REAL_DEV, help="items.jsonl to read")
    parser.add_argument("--repeat", type=int, default=2000, help="speed: calls per policy")
    args = parser.parse_args()
    policies = args.policy or [p for p in DEFAULT_POLICIES if p in available_policies()]
    names = args.set or ["real-dev", *OWN_SETS]
    bundles: dict[str, dict[str, Any]] = {}
    sets: dict[str, list[Case]] = {}
    for name in names:
        if name == "real-dev":
            if not args.real_dev.is_file():
                print(f"real-dev: {args.real_dev} not found; skipped")
                continue
            sets[name] = real_dev_cases(args.real_dev, bundles)
        else:
            sets[name] = own_cases(name, bundles)
    judge = _load_judge(args.judge) if args.judge else None
    runs: list[tuple[str, object]] = [(p, None) for p in policies]
    if judge is not None:
        runs = [(JUDGED_POLICY, judge)]
    summary = []
    for name, cases in sets.items():
        if not cases:
            print(f"\n{name}: no answers; skipped")
            continue
        for policy_name, with_judge in runs:
            policy = load_policy(policy_name)
            judged = judge_cases(cases, bundles, policy, with_judge)
            title = f"{policy_name} (ruleset {policy.firewall_ruleset}), {name}"
            summary.append((name, policy_name, report(title, judged, show=args.show)))
    print("\nsummary                             accept correct  reject wrong  on target")
    for name, policy_name, figures in summary:
        cells = [
            f"{100 * v:5.1f} %" if v is not None else "    -"
            for v in (figures["accept"], figures["reject"], figures["on_target"])
        ]
        print(f"  {name:<9} {policy_name:<22} {cells[0]:>9} {cells[1]:>13} {cells[2]:>10}")
    if args.repeat:
        speed([p for p, _ in runs], args.repeat, sets.get("real-dev", []), bundles)


if __name__ == "__main__":
    main()
