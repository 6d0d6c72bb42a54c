"""firewall_v2's rules, each over its own table of cases (``cases/<rule>.json``).

A case is an answer, the rows it is judged over (``sample``: the quick start's admitted
entries; ``sample_all``: every row of it admitted; or a list of row texts), and what R5 must
say: ``pass`` or the reason code of the first enforced finding. Every answer goes through
the real R2 -> R3 -> R4 path with a scripted model standing in for the provider.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groundlock import (
    AssembleEvidence,
    BuildPrompt,
    ExecuteModel,
    ValidationResult,
    ValidationStatus,
    load_policy,
    validate_answer,
)
from tests.builders import make_bundle, make_row, sample_bundle
from tests.fakes.chat import ScriptedChatModel

POLICY = load_policy("R2_POLICY_V2")
CASES_DIR = Path(__file__).parent / "cases"


def _rows(spec: Any) -> dict[str, Any]:
    if spec in (None, "sample"):
        return sample_bundle()
    if spec == "sample_all":
        bundle = sample_bundle()
        for row in bundle["results"]:  # every row admitted: no filter, similar, distinct
            row["equipment_id"] = "TUG-A320-07"
            row["similarity"] = max(row["similarity"], 0.8)
        bundle["results"] = [r for r in bundle["results"] if not r["chunk_id"].endswith("-dup")]
        for rank, row in enumerate(bundle["results"]):
            row["rank"] = rank
        return bundle
    return make_bundle([make_row(i, chunk_text=row["text"]) for i, row in enumerate(spec)])


def judged(answer: str, rows: Any = None, question: str | None = None) -> ValidationResult:
    """R5's verdict on ``answer`` under firewall_v2, over the rows named."""
    bundle = _rows(rows)
    if question is not None:
        bundle["user_question"] = question
    prompt = (AssembleEvidence(policy=POLICY) | BuildPrompt(policy=POLICY)).invoke(bundle)
    model = ScriptedChatModel(text=answer)
    return validate_answer(ExecuteModel(model=model, policy=POLICY).invoke(prompt), POLICY)


def _cases() -> list[Any]:
    found = []
    for path in sorted(CASES_DIR.glob("*.json")):
        for index, case in enumerate(json.loads(path.read_text(encoding="utf-8"))):
            found.append(pytest.param(case, id=f"{path.stem}-{index}-{case['why'][:40]}"))
    return found


@pytest.mark.parametrize("case", _cases())
def test_each_case_gets_the_verdict_its_table_gives(case: dict[str, Any]):
    result = judged(case["answer"], case.get("rows"), case.get("question"))
    if case["expect"] == "pass":
        assert result.validation_status is ValidationStatus.PASSED, result.message
    else:
        assert result.validation_status is ValidationStatus.FAILED
        assert result.failure_reason is not None
        assert result.failure_reason.value == case["expect"], result.message
    assert result.firewall_ruleset == "firewall_v2"


def test_every_rule_of_the_ruleset_with_a_mode_has_a_case_table():
    tables = {path.stem for path in CASES_DIR.glob("*.json")}
    substantive = {"unsupported_value", "misattributed_citation", "unsupported_entity"}
    assert substantive | {"contradicts_evidence", "obeyed_instruction"} <= tables


def test_a_flagged_rule_records_its_finding_and_the_answer_passes():
    # support_coverage flags: few of the sentence's words are in what it cites.
    answer = "Swap out the cartridge at intervals of 500 operating hours. [C0]"
    rows = [{"text": "Replace the case drain filter element every 500 operating hours."}]
    result = judged(answer, rows)
    assert result.validation_status is ValidationStatus.PASSED
    (finding,) = [f for f in result.findings if f.rule == "support_coverage"]
    assert finding.mode == "flag"
    assert finding.sentence == 1
    assert result.grounding_metrics.support_coverage[0] < POLICY.min_support_coverage


def test_a_policy_can_flag_a_substantive_rule_and_still_records_it():
    flagging = POLICY.model_copy(
        update={
            "policy_version": "R2_POLICY_V2_FLAG_VALUES",
            "firewall_modes": {**POLICY.firewall_modes, "unsupported_value": "flag"},
        }
    )
    bundle = sample_bundle()
    prompt = (AssembleEvidence(policy=flagging) | BuildPrompt(policy=flagging)).invoke(bundle)
    answer = "Replace the case drain filter element every 500 operating hours (kit KX-99). [C0]"
    model = ScriptedChatModel(text=answer)
    result = validate_answer(ExecuteModel(model=model, policy=flagging).invoke(prompt), flagging)
    assert result.validation_status is ValidationStatus.PASSED
    assert [(f.rule, f.mode) for f in result.findings if f.rule == "unsupported_value"] == [
        ("unsupported_value", "flag")
    ]


def test_the_first_enforced_finding_in_table_order_names_the_reason():
    # A misattributed value and a flipped modality in one answer: misattribution comes
    # first in firewall_v2's table; both are recorded.
    answer = "Case drain pressure may exceed 3.5 bar at 1,800 rpm. [C0]"
    result = judged(answer)
    assert result.failure_reason is not None
    assert result.failure_reason.value == "MISATTRIBUTED_CITATION"
    rules = [f.rule for f in result.findings]
    assert rules.index("misattributed_citation") < len(rules)
