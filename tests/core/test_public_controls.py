"""The public response's answer controls: confidence, the model used, citation metadata."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from groundlock import (
    GenerationStatus,
    Policy,
    ReasonCode,
    grounded_answer_chain,
    load_policy,
)
from groundlock.contracts.enums import Confidence
from tests.builders import make_bundle, policy_with, sample_bundle
from tests.fakes.chat import ScriptedChatModel

# Every row past the gates, so that only the top similarity decides.
OPEN = policy_with(
    policy_version="OPEN_GATES_V1", min_top_similarity_score=0.3, min_similarity_score=0.3
)


def _with_top(top: float) -> dict[str, Any]:
    """The sample bundle with its rows' similarities shifted so that the top one is ``top``."""
    bundle = sample_bundle()
    shift = top - max(row["similarity"] for row in bundle["results"])
    bundle["results"] = [
        {**row, "similarity": round(row["similarity"] + shift, 6)} for row in bundle["results"]
    ]
    return bundle


@pytest.mark.parametrize(
    ("top", "level"),
    [
        (0.95, Confidence.HIGH),
        (0.88, Confidence.HIGH),  # at a threshold counts as reaching it
        (0.879999, Confidence.MEDIUM),
        (0.80, Confidence.MEDIUM),
        (0.799999, Confidence.LOW),
        (0.62, Confidence.LOW),
    ],
)
def test_confidence_buckets_the_top_admitted_similarity_at_the_policys_thresholds(
    top: float, level: Confidence
) -> None:
    response = grounded_answer_chain(policy=OPEN).invoke(_with_top(top))
    assert response.status is GenerationStatus.OK
    assert response.confidence is level


def test_the_thresholds_are_the_policys() -> None:
    strict = policy_with(
        policy_version="STRICT_CONFIDENCE_V1",
        min_top_similarity_score=0.3,
        min_similarity_score=0.3,
        confidence={"high": 0.99, "medium": 0.95},
    )
    assert grounded_answer_chain(policy=strict).invoke(_with_top(0.96)).confidence is (
        Confidence.MEDIUM
    )
    with pytest.raises(ValidationError, match="medium must not exceed high"):
        policy_with(confidence={"high": 0.5, "medium": 0.6})


def test_the_default_thresholds_leave_every_locked_policy_hash_as_it_was() -> None:
    default = load_policy()
    same = Policy.model_validate(default.model_dump())
    assert same.policy_sha256 == default.policy_sha256
    moved = policy_with(confidence={"high": 0.9, "medium": 0.8})
    assert moved.policy_sha256 != default.policy_sha256


def test_only_an_ok_answer_has_a_confidence() -> None:
    chain = grounded_answer_chain()
    no_evidence = chain.invoke(make_bundle([], retrieval_status="NO_EVIDENCE"))
    failed = chain.invoke({"request_id": "r-1"})
    refused = grounded_answer_chain(model=ScriptedChatModel(text=load_policy().refusal_text))
    by_the_model = refused.invoke(sample_bundle())
    assert by_the_model.status is GenerationStatus.NO_EVIDENCE
    for response in (no_evidence, failed, by_the_model):
        assert response.confidence is None


def test_model_used_names_the_pinned_model_only_when_it_was_called() -> None:
    ok = grounded_answer_chain().invoke(sample_bundle())
    assert ok.model_used == "groundlock-extractive-v1"
    rejected = grounded_answer_chain(model=ScriptedChatModel(text="Inspect it weekly. [C9]"))
    answer = rejected.invoke(sample_bundle())
    assert (answer.failure_reason, answer.model_used) == (
        ReasonCode.INVALID_CITATION_REFERENCE,
        "scripted-model",
    )
    uncalled = grounded_answer_chain().invoke(make_bundle([], retrieval_status="NO_EVIDENCE"))
    assert uncalled.model_used is None
    assert grounded_answer_chain().invoke({"request_id": "r-1"}).model_used is None


def test_citation_metadata_travels_from_the_row_to_the_public_citation() -> None:
    bundle = sample_bundle()
    bundle["results"] = [
        {**row, "page": 14 + i, "citation_label": f"Tug AMM, p. {14 + i}", "document_id": "AMM"}
        | ({"semantic_id": "AMM_29_11_00", "source_file": "tug-amm.pdf"} if i == 0 else {})
        for i, row in enumerate(bundle["results"])
    ]
    response = grounded_answer_chain().invoke(bundle)
    assert response.status is GenerationStatus.OK
    pages = {c.anchor: (c.page, c.citation_label, c.document_id) for c in response.citations}
    assert pages["C0"] == (14, "Tug AMM, p. 14", "AMM")
    dumped = response.model_dump_json()
    assert "tug-amm.pdf" not in dumped  # a file name is not a public citation field
    plain = grounded_answer_chain().invoke(sample_bundle()).citations[0]
    assert (plain.page, plain.citation_label, plain.document_id) == (None, None, None)


@pytest.mark.parametrize("page", [0, -1, True, "3", 1.0, 2**63])
def test_a_page_is_a_positive_integer(page: object) -> None:
    bundle = sample_bundle()
    bundle["results"][0] = {**bundle["results"][0], "page": page}
    response = grounded_answer_chain().invoke(bundle)
    assert response.failure_reason is ReasonCode.INPUT_SCHEMA_INVALID
    assert response.failure_message is not None
    assert "page" in response.failure_message
