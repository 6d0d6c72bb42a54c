"""R6: turn a validation verdict into the public response, and summarise the request.

Packaging follows ``000`` R6 to the letter: FAILED (validation not PASSED) has no answer and
no citations; NO_EVIDENCE has the validated refusal and no citations; OK has the validated
answer and, in validated order, the public metadata of each cited entry that exists in the
bundle. Token usage and latency come from the model call.

:func:`request_summary` is the one structured record per request that ``000`` lists as the
minimum needed to debug drift, regressions, grounding failures and cost: identities,
versions, hashes, statuses, counts and timings. It holds no prompt, evidence or answer text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from groundlock.contracts.assembly import SelectedEvidence
from groundlock.contracts.enums import Confidence, GenerationStatus, ValidationStatus
from groundlock.contracts.execution import NO_MODEL_NAME
from groundlock.contracts.reasons import CLIENT_INPUT_REASONS, ReasonCode
from groundlock.contracts.response import PublicCitation, PublicResponse, TokenUsage
from groundlock.contracts.state import Judged
from groundlock.policies.model import Policy

__all__ = [
    "NO_USAGE",
    "confidence_for",
    "failed_response",
    "package_response",
    "public_citations",
    "refused_for_no_model",
    "request_summary",
    "response_confidence",
]

NO_USAGE = TokenUsage(prompt_tokens=0, completion_tokens=0, total_tokens=0)
"""Usage of a request that never reached a model."""


def package_response(state: Judged, policy: Policy) -> PublicResponse:
    """The public response for ``state``; nothing but validated, public data leaves."""
    result, execution = state.validation, state.execution
    if not execution.attempts:
        usage = NO_USAGE
    else:
        usage = TokenUsage(
            prompt_tokens=execution.prompt_tokens_actual,
            completion_tokens=execution.completion_tokens_actual,
            total_tokens=execution.total_tokens_actual,
        )
    latency = execution.llm_latency_ms
    called = execution.attempts and execution.pinned is not None
    model_used = execution.pinned.model_name if called and execution.pinned else None
    if refused_for_no_model(state, policy):
        # 004: no model configured, and the policy refuses rather than fails. The refusal is
        # the policy's own text, never a model's; the trail keeps MODEL_NOT_CONFIGURED.
        return PublicResponse(
            request_id=state.request_id,
            status=GenerationStatus.NO_EVIDENCE,
            answer=policy.refusal_text,
            citations=(),
            token_usage=NO_USAGE,
            latency_ms=0.0,
            failure_reason=None,
            failure_message=None,
            confidence=response_confidence(GenerationStatus.NO_EVIDENCE, (), policy),
            model_used=NO_MODEL_NAME,
        )
    if result.validation_status is not ValidationStatus.PASSED:
        reason = result.failure_reason or ReasonCode.INTERNAL_ERROR
        return failed_response(
            state.request_id,
            reason,
            result.message,
            usage=usage,
            latency_ms=latency,
            model_used=model_used,
        )
    citations: tuple[PublicCitation, ...] = ()
    if result.generation_status is GenerationStatus.OK:
        citations = public_citations(
            state.bundle.selected_evidence, result.validated_citations, policy
        )
    return PublicResponse(
        request_id=state.request_id,
        status=result.generation_status,
        answer=result.validated_answer_text,
        citations=citations,
        token_usage=usage,
        latency_ms=latency,
        failure_reason=None,
        failure_message=None,
        confidence=response_confidence(
            result.generation_status, state.bundle.selected_evidence, policy
        ),
        model_used=model_used,
    )


def refused_for_no_model(state: Judged, policy: Policy) -> bool:
    """Whether ``state`` found no model built and ``policy`` refuses for it (004).

    Only ``MODEL_NOT_CONFIGURED`` qualifies: a model that was built and then failed (an
    outage, a quota) fails the request as always; a refusal would invent an answer's absence.
    """
    return (
        policy.on_model_unavailable == "refuse"
        and state.outcome.reason is ReasonCode.MODEL_NOT_CONFIGURED
        and state.status is GenerationStatus.FAILED
    )


def public_citations(
    evidence: Sequence[SelectedEvidence], anchors: Sequence[str], policy: Policy
) -> tuple[PublicCitation, ...]:
    """What a reader is shown of the entries ``anchors`` name, in citation order.

    Also how the Spark runner shows a request it reads back from the trail: the trail keeps
    the validated anchors, and R2 gives the same entries for the same bundle again.
    """
    entries = {e.anchor: e for e in evidence}
    grammar = policy.grammar
    listed = (
        PublicCitation(
            anchor=grammar.public_anchor(entries[anchor]),
            knowledge_id=entries[anchor].knowledge_id,
            source_reference=entries[anchor].source_reference,
            event_date=d.isoformat() if (d := entries[anchor].event_date) else None,
            equipment_id=entries[anchor].equipment_id,
            page=entries[anchor].page,
            citation_label=entries[anchor].citation_label,
            document_id=entries[anchor].document_id,
        )
        for anchor in anchors
        if anchor in entries
    )
    # Two chunks of one page cited by one marker read the same to a reader: listed once.
    return tuple(dict.fromkeys(listed))


def response_confidence(
    status: GenerationStatus, evidence: Sequence[SelectedEvidence], policy: Policy
) -> Confidence | None:
    """The public ``confidence`` of a response of ``status``.

    OK answers always have one; a NO_EVIDENCE refusal has ``low`` where the policy says so
    (004), else none; FAILED never has one.
    """
    if status is GenerationStatus.OK:
        return confidence_for(evidence, policy)
    if status is GenerationStatus.NO_EVIDENCE and policy.confidence.no_evidence == "low":
        return Confidence.LOW
    return None


def confidence_for(evidence: Sequence[SelectedEvidence], policy: Policy) -> Confidence:
    """The confidence level of an answer on ``evidence``: its top admitted score, bucketed.

    ``evidence`` is what the prompt held (after R3's pruning): what the answer could rest on.
    The score is the top similarity, or under ``basis: rerank_else_similarity`` the top of
    each entry's rerank score where it has one and its similarity where not. It is compared
    with the thresholds as the policy says: ``at_least`` (reaching a threshold counts) or
    ``above`` (004: strictly greater). No evidence at all is ``low``.
    """
    settings = policy.confidence
    if not evidence:
        return Confidence.LOW
    if settings.basis == "rerank_else_similarity":
        top = max(
            e.rerank_score if e.rerank_score is not None else e.similarity_score for e in evidence
        )
    else:
        top = max(e.similarity_score for e in evidence)
    reaches = top.__gt__ if settings.comparison == "above" else top.__ge__
    if reaches(settings.high):
        return Confidence.HIGH
    if reaches(settings.medium):
        return Confidence.MEDIUM
    return Confidence.LOW


def failed_response(
    request_id: str | None,
    reason: ReasonCode,
    message: str | None,
    *,
    usage: TokenUsage | None = None,
    latency_ms: float = 0.0,
    model_used: str | None = None,
) -> PublicResponse:
    """A FAILED public response: a code, and a message only for the caller's own errors."""
    return PublicResponse(
        request_id=request_id,
        status=GenerationStatus.FAILED,
        answer="",
        citations=(),
        token_usage=usage or NO_USAGE,
        latency_ms=latency_ms,
        failure_reason=reason,
        failure_message=message if reason in CLIENT_INPUT_REASONS else None,
        confidence=None,
        model_used=model_used,
    )


def request_summary(state: Judged | None, response: PublicResponse) -> dict[str, Any]:
    """The structured debug record of one request (``000`` observability minimum set).

    ``state`` is None only when R6 received no run state at all.
    """
    if state is None:
        return {**_EMPTY_SUMMARY, **_response_fields(response)}
    bundle, prompt, execution, result = (
        state.bundle,
        state.prompt,
        state.execution,
        state.validation,
    )
    trace, metrics = bundle.trace, result.grounding_metrics
    return {
        "request_id": response.request_id,
        "run_id": state.run_id,
        "assembly_status": bundle.assembly_status.value,
        "assembly_reason": bundle.reason_code.value if bundle.reason_code else None,
        "generation_status": result.generation_status.value,
        "validation_status": result.validation_status.value,
        "policy_version": state.policy_version,
        "policy_sha256": state.policy_sha256,
        "index_version": trace.index_version,
        "embedding_model": trace.embedding_model,
        "retrieval_strategy": trace.retrieval_strategy,
        "score_normalization": trace.score_normalization,
        "access_denied_count": trace.access_denied_count,
        "template_version": prompt.template_version,
        "prompt_sha256": prompt.prompt_sha256,
        "model_name": execution.model_name,
        "reported_model_name": execution.reported_model_name,
        "response_id": execution.response_id,
        "finish_reason": execution.finish_reason.value,
        "attempts": len(execution.attempts),
        **_response_fields(response),
        # A refusal for want of a model says why in the trail: not the evidence, not a model.
        **(
            {"failure_reason": ReasonCode.MODEL_NOT_CONFIGURED.value}
            if response.status is GenerationStatus.NO_EVIDENCE
            and state.outcome.reason is ReasonCode.MODEL_NOT_CONFIGURED
            else {}
        ),
        "retrieved_k": bundle.metrics.retrieved_k if bundle.metrics else None,
        "selected_k": len(bundle.selected_evidence),
        "citation_count": metrics.citation_count,
        "uncited_sentence_count": metrics.uncited_sentence_count,
        "invalid_anchor_count": metrics.invalid_anchor_count,
        "malformed_anchor_count": metrics.malformed_anchor_count,
        "suspicious_new_id_count": len(metrics.suspicious_new_ids),
        "refusal_detected": metrics.refusal_detected,
        "length_ratio_flag": metrics.length_ratio_flag,
        "firewall_ruleset": result.firewall_ruleset,
        "firewall_ruleset_sha256": result.firewall_ruleset_sha256,
        "flagged": sorted({f.rule for f in result.findings if f.mode == "flag"}),
    }


def _response_fields(response: PublicResponse) -> dict[str, Any]:
    return {
        "status": response.status.value,
        "failure_reason": response.failure_reason.value if response.failure_reason else None,
        "latency_ms": round(response.latency_ms, 3),
        "prompt_tokens": response.token_usage.prompt_tokens,
        "completion_tokens": response.token_usage.completion_tokens,
        "total_tokens": response.token_usage.total_tokens,
    }


_EMPTY_SUMMARY: dict[str, Any] = {
    "request_id": None, "run_id": None, "assembly_status": None, "assembly_reason": None,
    "generation_status": None, "validation_status": None, "policy_version": None,
    "policy_sha256": None, "index_version": None, "embedding_model": None,
    "retrieval_strategy": None, "score_normalization": None, "access_denied_count": None,
    "template_version": None, "prompt_sha256": None, "model_name": None,
    "reported_model_name": None, "response_id": None, "finish_reason": None, "attempts": 0,
    "retrieved_k": None, "selected_k": None, "citation_count": None,
    "uncited_sentence_count": None, "invalid_anchor_count": None,
    "malformed_anchor_count": None, "suspicious_new_id_count": None,
    "refusal_detected": None, "length_ratio_flag": None, "firewall_ruleset": None,
    "firewall_ruleset_sha256": None, "flagged": [],
}  # fmt: skip
"""The summary's keys when R6 got no state: the same record shape, nothing known."""
