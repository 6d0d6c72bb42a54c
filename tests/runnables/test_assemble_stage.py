"""AssembleEvidence as an LCEL stage: the shared stage contract plus R2 specifics."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.runnables import RunnableLambda

from groundlock import (
    Assembled,
    AssembleEvidence,
    AssemblyStatus,
    GenerationStatus,
    PolicyError,
    ReasonCode,
    RetrievalBundle,
    load_policy,
)
from tests.builders import make_bundle, make_row, policy_with, sample_bundle
from tests.contract_suite import StageContract


class TestAssembleEvidenceContract(StageContract):
    run_name = "R2.AssembleEvidence"
    input_type = RetrievalBundle
    output_type = Assembled
    canary = "depressurise the system"

    @pytest.fixture
    def stage(self) -> AssembleEvidence:
        return AssembleEvidence()

    @pytest.fixture
    def valid_inputs(self) -> list[Any]:
        return [
            sample_bundle(),
            RetrievalBundle.model_validate(make_bundle()),
            make_bundle([], retrieval_status="NO_EVIDENCE"),
        ]

    @pytest.fixture
    def invalid_input(self) -> Any:
        return make_bundle([make_row(0, rank=3)])

    def break_stage(self, monkeypatch: pytest.MonkeyPatch) -> None:
        def explode(raw: str) -> None:
            raise RuntimeError(raw)

        monkeypatch.setattr("groundlock.core.evidence_assembly.ENTRY_FACTS", explode)

    def assert_failed_closed(self, output: Any) -> None:
        assert output.status is GenerationStatus.FAILED
        assert output.outcome.reason is ReasonCode.INTERNAL_ERROR
        assert output.request_id == "req-2026-11-22-0001"
        assert output.bundle.assembly_status is AssemblyStatus.FAILED
        assert output.bundle.reason_code is ReasonCode.INTERNAL_ERROR
        assert output.bundle.request_id == "req-2026-11-22-0001"
        assert output.bundle.evidence_block_text == ""


def test_policy_can_be_named_or_given_and_defaults_to_r2_policy_v4():
    by_default = AssembleEvidence()
    by_name = AssembleEvidence(policy="R2_POLICY_V4")
    by_object = AssembleEvidence(policy=load_policy("R2_POLICY_V4"))
    assert by_default.policy == by_name.policy == by_object.policy
    assert by_default.invoke(sample_bundle()) == by_object.invoke(sample_bundle())


def test_policy_borrowing_a_builtin_name_with_other_values_is_refused():
    loosened = policy_with(min_similarity_score=0.0, min_top_similarity_score=0.0)
    assert loosened.policy_version == "R2_POLICY_V4"
    with pytest.raises(PolicyError, match="content differs from the locked built-in"):
        AssembleEvidence(policy=loosened)
    renamed = policy_with(
        policy_version="LOOSE_V1", min_similarity_score=0.0, min_top_similarity_score=0.0
    )
    assert AssembleEvidence(policy=renamed).policy.policy_version == "LOOSE_V1"


def test_unknown_policy_name_fails_at_construction_not_per_request():
    with pytest.raises(PolicyError, match="no built-in policy named 'R9_POLICY_V9'"):
        AssembleEvidence(policy="R9_POLICY_V9")


def test_stage_composes_in_lcel_and_never_raises_on_garbage():
    chain = RunnableLambda(lambda raw: raw) | AssembleEvidence()
    states = [chain.invoke(item) for item in ("junk", None, sample_bundle())]
    assert [s.bundle.assembly_status for s in states] == [
        AssemblyStatus.FAILED, AssemblyStatus.FAILED, AssemblyStatus.OK,
    ]  # fmt: skip
    assert [s.status for s in states] == [
        GenerationStatus.FAILED, GenerationStatus.FAILED, GenerationStatus.OK,
    ]  # fmt: skip
