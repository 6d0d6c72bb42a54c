"""Judge the corpus with the code importable now and write its verdicts.

``python -m tests.firewall.corpus.freeze <POLICY>`` writes ``verdicts_<ruleset>.jsonl``,
where the ruleset is the one the policy names (``firewall_v1`` for code that predates
rulesets). Run it once per ruleset version, when that version is made: afterwards the file
is the reference, and ``tests/firewall/test_corpus.py`` fails on any verdict that moves.

A ruleset of the ``source_page`` grammar judges each answer translated into its markers over
:func:`~tests.firewall.corpus.build.paged_bundles`; an answer the translation has no analogue
for (``[C01]``: a page number has no leading zero) is left out, and has no verdict.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

from groundlock import (
    AssembleEvidence,
    BuildPrompt,
    ExecuteModel,
    Prompted,
    ValidationResult,
    load_policy,
    validate_answer,
)
from groundlock.citations import SOURCE_PAGE
from groundlock.policies.model import Policy
from groundlock.policies.ruleset import load_ruleset
from tests.fakes.chat import ScriptedChatModel
from tests.firewall.corpus.build import (
    ANSWERS,
    HERE,
    MANUAL_FILE,
    PAGED_POLICY,
    bundles,
    paged_bundles,
)
from tests.firewall.eval.presets import translate_answer


def corpus() -> list[dict[str, Any]]:
    """The corpus rows of ``answers.jsonl``."""
    with ANSWERS.open(encoding="utf-8") as rows:
        return [json.loads(line) for line in rows]


def judged(
    policy: Policy, *, manual_file: str = MANUAL_FILE
) -> Iterator[tuple[dict[str, Any], ValidationResult]]:
    """Every corpus row with R5's verdict on it under ``policy``.

    Under a ``source_page`` ruleset the row's answer is the translated one, over
    :func:`~tests.firewall.corpus.build.paged_bundles` (``manual_file``).
    """
    paged = load_ruleset(policy.firewall_ruleset).grammar is SOURCE_PAGE
    prompts: dict[str, Prompted] = {
        name: (AssembleEvidence(policy=policy) | BuildPrompt(policy=policy)).invoke(bundle)
        for name, bundle in (paged_bundles(manual_file) if paged else bundles()).items()
    }
    for row in corpus():
        prompt = prompts[row["bundle"]]
        answer = row["answer"]
        if paged:
            entries = [entry.model_dump() for entry in prompt.bundle.selected_evidence]
            translation = translate_answer(answer, entries, PAGED_POLICY)
            if translation.untranslatable is not None:
                continue
            answer = translation.text
        model = ScriptedChatModel(text=answer, finish_reason=row["finish_reason"])
        execution = ExecuteModel(model=model, policy=policy).invoke(prompt)
        yield {**row, "answer": answer}, validate_answer(execution, policy)


def verdict(result: ValidationResult) -> dict[str, Any]:
    """What the corpus pins of one verdict."""
    return {
        "generation_status": result.generation_status.value,
        "failure_reason": result.failure_reason.value if result.failure_reason else None,
        "message": result.message,
        "metrics": result.grounding_metrics.model_dump(mode="json"),
    }


if __name__ == "__main__":
    policy = load_policy(sys.argv[1])
    ruleset = getattr(policy, "firewall_ruleset", "firewall_v1")
    path = HERE / f"verdicts_{ruleset}.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for row, result in judged(policy):
            out.write(json.dumps({"id": row["id"], **verdict(result)}, sort_keys=True) + "\n")
    print(f"verdicts written to {path.name}")  # noqa: T201  (a command-line tool)
