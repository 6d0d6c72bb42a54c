"""Spec 004's confidence bands and its refusal when no model is configured, as policy options.

The policy is ``examples/policies/MANUALS_004_POLICY_V1.json``: a user's own policy file,
``SOURCE_PAGE_POLICY_V3`` with 004's bands (high above 0.5, medium above 0.2, strictly; on
the rerank score where a row has one) and ``on_model_unavailable: refuse``. The expected
levels below are 004's own table, written out, not computed by groundlock.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groundlock import (
    Confidence,
    GenerationStatus,
    MemoryAuditSink,
    Policy,
    ProviderUnavailableError,
    grounded_answer_chain,
    load_policy,
)
from groundlock.cli import main
from groundlock.stores import QueryRow, TrailQuery, ValidationRow
from tests.builders import make_bundle
from tests.fakes.chat import ModelCalls, ScriptedChatModel
from tests.presets.corpus import MANUAL_QUESTION, manual_rows

EXAMPLE = Path(__file__).parents[2] / "examples" / "policies" / "MANUALS_004_POLICY_V1.json"
MANUAL = Path(__file__).parents[2] / "examples/data/presets/manuals_case_drain_filter.json"
REFUSAL = "I could not find this in your documents."


@pytest.fixture(scope="module")
def bands() -> Policy:
    return load_policy(EXAMPLE)


def _bundle(**fields: Any) -> dict[str, Any]:
    return make_bundle(manual_rows(), user_question=MANUAL_QUESTION, **fields)


def _reranked(top: float) -> dict[str, Any]:
    """Every row similar enough to pass the gates; the first reranked at ``top``, the
    others at 0.0, so the top rerank score is ``top``."""
    bundle = _bundle()
    for number, row in enumerate(bundle["results"]):
        row["rerank_score"] = top if number == 0 else 0.0
    return bundle


# Bands ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("top", "level"),
    [
        (0.5000001, Confidence.HIGH),
        (0.5, Confidence.MEDIUM),  # 004: "> 0.5" is high, so 0.5 itself is not
        (0.2000001, Confidence.MEDIUM),
        (0.2, Confidence.LOW),  # "> 0.2" is medium, so 0.2 itself is low
        (-3.5, Confidence.LOW),  # a cross-encoder's logit may be negative
    ],
)
def test_004_bands_on_the_rerank_score_at_their_boundaries(
    bands: Policy, top: float, level: Confidence
) -> None:
    response = grounded_answer_chain(policy=bands).invoke(_reranked(top))
    assert response.status is GenerationStatus.OK, response.failure_reason
    assert response.confidence is level


def test_a_rerank_score_wins_over_the_rows_similarity(bands: Policy) -> None:
    # Similarities 0.93, 0.87, 0.81: "high" on either scale. Reranked low, the row is low.
    bundle = _bundle()
    for row in bundle["results"]:
        row["rerank_score"] = 0.1
    assert grounded_answer_chain(policy=bands).invoke(bundle).confidence is Confidence.LOW
    # A row without a rerank score counts with its similarity (0.81 > 0.5: high).
    del bundle["results"][2]["rerank_score"]
    assert grounded_answer_chain(policy=bands).invoke(bundle).confidence is Confidence.HIGH


@pytest.mark.parametrize(
    ("top", "level"),
    [
        (0.5000001, Confidence.HIGH),
        (0.5, Confidence.MEDIUM),
        (0.2000001, Confidence.MEDIUM),
        (0.2, Confidence.LOW),
    ],
)
def test_004_bands_on_the_similarity_when_no_row_is_reranked(
    bands: Policy, top: float, level: Confidence
) -> None:
    # The presets gate at 0.76: for a similarity of 0.5 to be admitted the gates go down.
    lowered = Policy.model_validate(
        {
            **bands.model_dump(),
            "policy_version": "MANUALS_004_LOW_GATES_V1",
            "min_top_similarity_score": 0.1,
            "min_similarity_score": 0.1,
        }
    )
    bundle = _bundle()
    for number, row in enumerate(bundle["results"]):
        row["similarity"] = top if number == 0 else 0.15
    response = grounded_answer_chain(policy=lowered).invoke(bundle)
    assert response.status is GenerationStatus.OK, response.failure_reason
    assert response.confidence is level


def test_a_refusal_is_low_and_a_failure_has_none_under_the_bands(bands: Policy) -> None:
    nothing = _bundle(retrieval_status="NO_EVIDENCE", results=[], top_k=5)
    empty = grounded_answer_chain(policy=bands).invoke(nothing)
    assert (empty.status, empty.answer, empty.confidence) == (
        GenerationStatus.NO_EVIDENCE,
        REFUSAL,
        Confidence.LOW,
    )
    by_the_model = grounded_answer_chain(policy=bands, model=ScriptedChatModel(text=REFUSAL))
    assert by_the_model.invoke(_bundle()).confidence is Confidence.LOW
    wrong = grounded_answer_chain(
        policy=bands, model=ScriptedChatModel(text="It is replaced often. [Source: x.pdf, p.1]")
    ).invoke(_bundle())
    assert wrong.status is GenerationStatus.FAILED
    assert wrong.confidence is None


def test_the_builtin_preset_keeps_its_bands_and_refusals_without_a_confidence() -> None:
    # 0.5 reranked would be medium under 004; SOURCE_PAGE_POLICY_V2 ignores rerank scores
    # and buckets the top similarity (0.93) at 0.88 / 0.80.
    plain = grounded_answer_chain(policy="SOURCE_PAGE_POLICY_V2")
    assert plain.invoke(_reranked(0.5)).confidence is Confidence.HIGH
    nothing = _bundle(retrieval_status="NO_EVIDENCE", results=[], top_k=5)
    assert plain.invoke(nothing).confidence is None


def test_the_option_is_in_the_policy_and_its_hash(bands: Policy) -> None:
    plain = load_policy("SOURCE_PAGE_POLICY_V3")
    same_but_name = Policy.model_validate(
        {**plain.model_dump(), "policy_version": bands.policy_version}
    )
    assert bands.policy_sha256 != same_but_name.policy_sha256
    dumped = bands.model_dump(mode="json")
    assert dumped["confidence"] == {
        "high": 0.5,
        "medium": 0.2,
        "comparison": "above",
        "basis": "rerank_else_similarity",
        "no_evidence": "low",
    }
    assert dumped["on_model_unavailable"] == "refuse"
    # Each knob on its own changes the hash too.
    for change in (
        {"comparison": "above"},
        {"basis": "rerank_else_similarity"},
        {"no_evidence": "low"},
    ):
        changed = Policy.model_validate(
            {**same_but_name.model_dump(), "confidence": {"high": 0.88, "medium": 0.8, **change}}
        )
        assert changed.policy_sha256 != same_but_name.policy_sha256, change


def test_a_policy_locked_with_its_own_thresholds_before_the_bands_keeps_its_hash() -> None:
    # Computed with groundlock before the three confidence fields existed (main at ab2c2f8).
    before = "5881e262f92d59748f1400035760290800eb5d195c79fd58264f0891ffcc8088"
    plain = load_policy("SOURCE_PAGE_POLICY_V2")
    own = Policy.model_validate(
        {
            **plain.model_dump(),
            "policy_version": "MY_MANUALS_V1",
            "confidence": {"high": 0.9, "medium": 0.6},
        }
    )
    assert own.policy_sha256 == before


def test_a_rerank_score_that_is_not_a_finite_number_fails_the_score_check(
    bands: Policy,
) -> None:
    # As a similarity's: a non-finite number fails the score check, another type the schema.
    for bad, reason in (
        (float("nan"), "SIMILARITY_INTEGRITY"),
        (float("inf"), "SIMILARITY_INTEGRITY"),
        ("0.7", "INPUT_SCHEMA_INVALID"),
        (True, "INPUT_SCHEMA_INVALID"),
    ):
        bundle = _bundle()
        bundle["results"][1]["rerank_score"] = bad
        response = grounded_answer_chain(policy=bands).invoke(bundle)
        assert response.failure_reason is not None
        assert response.failure_reason.value == reason, bad
        assert response.failure_message is not None
        assert response.failure_message.startswith("results[1].rerank_score: "), bad


# No model configured -------------------------------------------------------------------------


@pytest.fixture
def no_openai_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_ADMIN_KEY", raising=False)


@pytest.mark.usefixtures("no_openai_key")
def test_with_no_model_configured_the_policy_refuses_with_model_used_none(bands: Policy) -> None:
    sink = MemoryAuditSink()
    calls = ModelCalls()
    chain = grounded_answer_chain(model="openai:gpt-4.1-mini", policy=bands, store=sink)
    response = chain.invoke(_bundle(request_id="no-model"), {"callbacks": [calls]})
    assert response.model_dump(mode="json") == {
        "request_id": "no-model",
        "status": "NO_EVIDENCE",
        "answer": REFUSAL,
        "citations": [],
        "token_usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        "latency_ms": 0.0,
        "failure_reason": None,
        "failure_message": None,
        "confidence": "low",
        "model_used": "none",
    }
    assert calls.model_calls == 0
    everything = TrailQuery()
    (validation,) = sink.rows(ValidationRow, everything)
    (query,) = sink.rows(QueryRow, everything)
    # The trail tells it apart from a model's refusal (no attempt, no model) and from one
    # for want of evidence (the evidence was admitted; the reason is the missing model).
    assert (validation.status, validation.failure_reason) == ("NO_EVIDENCE", "MODEL_NOT_CONFIGURED")
    assert (validation.generation_status, validation.validation_status) == ("FAILED", "FAILED")
    assert (validation.assembly_status, validation.assembly_reason) == ("OK", None)
    assert (validation.model_provider, validation.model_name, validation.attempts) == (
        "none",
        "none",
        0,
    )
    assert validation.prompt_sha256 is not None  # the prompt was built; nothing was sent
    assert validation.message is not None
    assert "on_model_unavailable: refuse" in validation.message
    assert "OpenAIError" in validation.message
    assert (query.status, query.failure_reason) == ("NO_EVIDENCE", "MODEL_NOT_CONFIGURED")
    assert query.cited_chunk_ids == ()


@pytest.mark.usefixtures("no_openai_key")
def test_no_evidence_with_no_model_is_still_the_evidence_refusal(bands: Policy) -> None:
    sink = MemoryAuditSink()
    chain = grounded_answer_chain(model="openai:gpt-4.1-mini", policy=bands, store=sink)
    nothing = _bundle(request_id="nothing", retrieval_status="NO_EVIDENCE", results=[], top_k=5)
    response = chain.invoke(nothing)
    assert (response.status, response.answer) == (GenerationStatus.NO_EVIDENCE, REFUSAL)
    (row,) = sink.rows(ValidationRow, TrailQuery())
    assert (row.failure_reason, row.assembly_reason) == (None, "RETRIEVAL_NO_EVIDENCE")


@pytest.mark.usefixtures("no_openai_key")
def test_streaming_and_async_refuse_alike_with_no_model(bands: Policy) -> None:
    import asyncio  # noqa: PLC0415

    chain = grounded_answer_chain(model="openai:gpt-4.1-mini", policy=bands)
    events = list(chain.stream(_bundle()))
    assert [event.type for event in events] == ["response"]  # no sentence: no model wrote one
    final = events[-1].response
    assert (final.status, final.answer, final.model_used) == (
        GenerationStatus.NO_EVIDENCE,
        REFUSAL,
        "none",
    )
    awaited = asyncio.run(chain.ainvoke(_bundle()))
    assert (awaited.status, awaited.answer, awaited.model_used) == (
        GenerationStatus.NO_EVIDENCE,
        REFUSAL,
        "none",
    )


@pytest.mark.usefixtures("no_openai_key")
def test_by_default_a_missing_model_still_fails_to_build() -> None:
    with pytest.raises(ProviderUnavailableError, match="OpenAIError"):
        grounded_answer_chain(model="openai:gpt-4.1-mini", policy="SOURCE_PAGE_POLICY_V2")


def test_a_model_that_fails_mid_request_fails_it_even_under_refuse(bands: Policy) -> None:
    # A model was built (a key was given); the provider turns the call down (401). That is
    # not "no model configured": the request fails with its own reason, no refusal stands in.
    from langchain_openai import ChatOpenAI  # noqa: PLC0415

    from tests.fakes.openai_server import Error, FakeOpenAI  # noqa: PLC0415

    with FakeOpenAI() as server:
        server.script(Error(401, code="invalid_api_key"))
        model = ChatOpenAI(
            model="gpt-4.1-mini", api_key="sk-test", base_url=server.url, use_responses_api=False
        )
        response = grounded_answer_chain(policy=bands, model=model).invoke(_bundle())
    assert response.status is GenerationStatus.FAILED
    assert response.answer == ""
    assert response.failure_reason is not None
    assert response.failure_reason.value == "PROVIDER_AUTH_FAILED"
    assert response.model_used == "gpt-4.1-mini"


@pytest.mark.usefixtures("no_openai_key")
def test_ask_from_a_shell_refuses_with_model_used_none(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["ask", "--json", "--model", "openai:gpt-4.1-mini", "--bundle", str(MANUAL)]
    code = main([*argv, "--policy", str(EXAMPLE)])
    out, _ = capsys.readouterr()
    printed = json.loads(out)
    assert code == 0
    assert (printed["status"], printed["answer"], printed["model_used"]) == (
        "NO_EVIDENCE",
        REFUSAL,
        "none",
    )
    # The preset itself, without the option: a usage error, as before (exit 2).
    code = main([*argv, "--policy", "SOURCE_PAGE_POLICY_V2"])
    _, err = capsys.readouterr()
    assert code == 2
    assert "ProviderUnavailableError" in err
