"""``validate_text``: R5's verdict on an answer written elsewhere, with no model."""

from __future__ import annotations

import pytest
from langchain_core.runnables import RunnableSequence

from groundlock import (
    GenerationStatus,
    ReasonCode,
    grounded_answer_chain,
    load_policy,
    validate_text,
)
from tests.builders import make_bundle, sample_bundle
from tests.fakes.chat import ScriptedChatModel

POLICY = load_policy()


@pytest.mark.parametrize(
    "answer",
    [
        "Case drain pressure must not exceed 3.5 bar at 1,800 rpm. [C1]",
        "Case drain pressure must not exceed 4.5 bar at 1,800 rpm. [C1]",
        "The pump is fine. [C1] Replace it weekly.",
        "Case drain pressure must not exceed 3.5 bar at 1,800 rpm. [C7]",
        POLICY.refusal_text,
    ],
)
def test_the_verdict_is_the_one_r5_reaches_on_a_models_reply(answer: str) -> None:
    steps = grounded_answer_chain(model=ScriptedChatModel(text=answer)).steps
    in_chain = RunnableSequence(*steps[:4]).invoke(sample_bundle()).validation
    alone = validate_text(answer, sample_bundle())
    assert alone.model_dump() == in_chain.model_dump()


def test_a_bundle_without_evidence_admits_only_the_exact_refusal() -> None:
    empty = make_bundle([], retrieval_status="NO_EVIDENCE")
    assert (
        validate_text(POLICY.refusal_text, empty).generation_status is GenerationStatus.NO_EVIDENCE
    )
    claim = validate_text("Inspect the pump yearly. [C0]", empty)
    assert (claim.generation_status, claim.failure_reason) == (
        GenerationStatus.FAILED,
        ReasonCode.INVALID_REFUSAL_FORMAT,
    )
    assert claim.validated_answer_text == ""


def test_a_bundle_that_fails_r2_fails_with_its_reason() -> None:
    verdict = validate_text("Anything. [C0]", {"request_id": "r-9"})
    assert (verdict.request_id, verdict.failure_reason) == ("r-9", ReasonCode.INPUT_SCHEMA_INVALID)


def test_the_policy_decides_the_rules() -> None:
    changed = "Case drain pressure must not exceed 4.5 bar at 1,800 rpm. [C1]"
    assert validate_text(changed, sample_bundle()).failure_reason is ReasonCode.UNSUPPORTED_VALUE
    assert validate_text(changed, sample_bundle(), "R2_POLICY_V1").failure_reason is None
