"""A verdict names its citations as data, in the policy's citation form (spec ``002``).

``cited_ids``, ``invalid_citations``, ``malformed_citations`` and ``retrieved_ids`` are what
a reader of ``002``'s ``GroundedAnswer`` reads (``cited_sources``, ``invalid_citations``,
``retrieved_semantic_ids``); ``validated_citations`` keeps the internal keys the audit trail
and the response packaging read.
"""

from __future__ import annotations

from typing import Any

import pytest

from groundlock import GenerationStatus, ReasonCode, ValidationStatus, validate_text
from tests.builders import distinct_text, make_bundle, make_row


def _legal_bundle() -> dict[str, Any]:
    """Three rows with every preset's citation fields; rows 0 and 1 share a page."""
    rows = [
        make_row(
            rank,
            semantic_id=f"IPC_420_{rank}",
            citation_label=f"Penal Code s. 420 ({rank})",
            source_file="penal-code.pdf",
            page=(3, 3, 4)[rank],
            source_reference=f"Indian Penal Code s. 420 part {rank}",
        )
        for rank in range(3)
    ]
    return make_bundle(rows)


def _claim(rank: int) -> str:
    """A sentence every rule accepts as supported by row ``rank`` (its own text)."""
    return distinct_text(rank)


@pytest.mark.parametrize(
    ("policy", "marker", "cited", "retrieved"),
    [
        (
            "SEMANTIC_ID_POLICY_V1",
            "[IPC_420_1]",
            ("IPC_420_1",),
            ("IPC_420_0", "IPC_420_1", "IPC_420_2"),
        ),
        ("CIT_LABEL_POLICY_V1", "[CIT-02]", ("CIT-02",), ("CIT-01", "CIT-02", "CIT-03")),
        (
            "SOURCE_PAGE_POLICY_V1",
            "[Source: penal-code.pdf, p.3]",
            ("Source: penal-code.pdf, p.3",),
            ("Source: penal-code.pdf, p.3", "Source: penal-code.pdf, p.4"),
        ),
        ("R2_POLICY_V1", "[C1]", ("C1",), ("C0", "C1", "C2")),
    ],
)
def test_a_valid_answer_names_its_citations_and_the_retrieved_ids_in_the_policys_form(
    policy: str, marker: str, cited: tuple[str, ...], retrieved: tuple[str, ...]
) -> None:
    verdict = validate_text(f"{_claim(1)} {marker}", _legal_bundle(), policy)
    assert (verdict.validation_status, verdict.generation_status) == (
        ValidationStatus.PASSED,
        GenerationStatus.OK,
    )
    assert verdict.cited_ids == cited
    assert verdict.retrieved_ids == retrieved
    assert (verdict.invalid_citations, verdict.malformed_citations) == ((), ())


def test_the_internal_anchor_keys_stay_in_validated_citations() -> None:
    verdict = validate_text(f"{_claim(2)} [IPC_420_2]", _legal_bundle(), "SEMANTIC_ID_POLICY_V1")
    assert verdict.validated_citations == ("C2",)
    assert verdict.cited_ids == ("IPC_420_2",)


def test_a_page_marker_naming_two_chunks_is_one_cited_id_and_two_keys() -> None:
    verdict = validate_text(
        f"{_claim(0)} [Source: penal-code.pdf, p.3]", _legal_bundle(), "SOURCE_PAGE_POLICY_V1"
    )
    assert verdict.validated_citations == ("C0", "C1")
    assert verdict.cited_ids == ("Source: penal-code.pdf, p.3",)


def test_an_id_the_request_did_not_retrieve_is_named_exactly_as_written() -> None:
    # 002's Rule 4: [IPC_421_0] is not in the retrieved chunks; no case folding either.
    answer = f"{_claim(0)} [IPC_420_0] {_claim(1)} [IPC_421_0] [ipc_420_1] [IPC_421_0]"
    verdict = validate_text(answer, _legal_bundle(), "SEMANTIC_ID_POLICY_V1")
    assert verdict.failure_reason is ReasonCode.INVALID_CITATION_REFERENCE
    assert verdict.invalid_citations == ("IPC_421_0", "ipc_420_1")
    assert verdict.malformed_citations == ()
    assert (verdict.cited_ids, verdict.validated_citations) == ((), ())
    assert verdict.retrieved_ids == ("IPC_420_0", "IPC_420_1", "IPC_420_2")


@pytest.mark.parametrize(
    ("policy", "answer_marker", "invalid"),
    [
        ("CIT_LABEL_POLICY_V1", "[CIT-07]", ("CIT-07",)),
        (
            "SOURCE_PAGE_POLICY_V1",
            "[Source: penal-code.pdf, p.9]",
            ("Source: penal-code.pdf, p.9",),
        ),
        ("R2_POLICY_V1", "[C9]", ("C9",)),
    ],
)
def test_every_grammar_names_an_invalid_citation_without_its_brackets(
    policy: str, answer_marker: str, invalid: tuple[str, ...]
) -> None:
    verdict = validate_text(f"{_claim(0)} {answer_marker}", _legal_bundle(), policy)
    assert verdict.failure_reason is ReasonCode.INVALID_CITATION_REFERENCE
    assert verdict.invalid_citations == invalid


def test_malformed_citations_are_listed_apart_as_written() -> None:
    answer = f"{_claim(0)} [IPC_420_0, IPC_420_1]"
    verdict = validate_text(answer, _legal_bundle(), "SEMANTIC_ID_POLICY_V1")
    assert verdict.failure_reason is ReasonCode.MALFORMED_CITATION
    assert verdict.malformed_citations == ("[IPC_420_0, IPC_420_1]",)
    assert verdict.invalid_citations == ()


def test_the_exact_refusal_cites_nothing_and_still_names_what_was_retrieved() -> None:
    refusal = "I cannot answer based on the provided documents."
    verdict = validate_text(refusal, _legal_bundle(), "SEMANTIC_ID_POLICY_V1")
    assert verdict.generation_status is GenerationStatus.NO_EVIDENCE
    assert verdict.cited_ids == ()
    assert verdict.retrieved_ids == ("IPC_420_0", "IPC_420_1", "IPC_420_2")


def test_a_request_that_failed_before_any_answer_names_nothing() -> None:
    verdict = validate_text("Anything. [IPC_420_0]", {"request_id": "r1"}, "SEMANTIC_ID_POLICY_V1")
    assert verdict.failure_reason is ReasonCode.INPUT_SCHEMA_INVALID
    assert (
        verdict.cited_ids,
        verdict.invalid_citations,
        verdict.malformed_citations,
        verdict.retrieved_ids,
    ) == ((), (), (), ())


def test_with_nothing_retrieved_every_citation_of_an_answer_is_invalid() -> None:
    empty = make_bundle([], retrieval_status="NO_EVIDENCE")
    verdict = validate_text(
        "Cheating is an offence. [IPC_420_0] [IPC_420_0, X_1]", empty, "SEMANTIC_ID_POLICY_V1"
    )
    assert verdict.failure_reason is ReasonCode.INVALID_REFUSAL_FORMAT
    assert verdict.invalid_citations == ("IPC_420_0",)
    assert verdict.malformed_citations == ("[IPC_420_0, X_1]",)
    assert verdict.retrieved_ids == ()
