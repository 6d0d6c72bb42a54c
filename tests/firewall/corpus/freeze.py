"""Judge the corpus with the code importable now and write its verdicts.

``python -m tests.firewall.corpus.freeze <POLICY>`` writes ``verdicts_<ruleset>.jsonl``,
where the ruleset is the one the policy names (``firewall_v1`` for code that predates
rulesets). Run it once per ruleset version, when that version is made: afterwards the file
is the reference, and ``tests/firewall/test_corpus.py`` fails on any verdict that moves.
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
    PromptBuildResult,
    ValidationResult,
    load_policy,
    validate_answer,
)
from groundlock.policies.model import Policy
from tests.fakes.chat import ScriptedChatModel
from tests.firewall.corpus.build import ANSWERS, HERE, bundles


def corpus() -> list[dict[str, Any]]:
    """The corpus rows of ``answers.jsonl``."""
    with ANSWERS.open(encoding="utf-8") as rows:
        return [json.loads(line) for line in rows]


def judged(policy: Policy) -> Iterator[tuple[dict[str, Any], ValidationResult]]:
    """Every corpus row with R5's verdict on it under ``policy``."""
    prompts: dict[str, PromptBuildResult] = {
        name: (AssembleEvidence(policy=policy) | BuildPrompt(policy=policy)).invoke(bundle)
        for name, bundle in bundles().items()
    }
    for row in corpus():
        model = ScriptedChatModel(text=row["answer"], finish_reason=row["finish_reason"])
        execution = ExecuteModel(model=model, policy=policy).invoke(prompts[row["bundle"]])
        yield row, validate_answer(execution, policy)


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
