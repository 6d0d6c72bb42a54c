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

from typing import Any

from groundlock.contracts.enums import GenerationStatus, ValidationStatus
from groundlock.contracts.reasons import CLIENT_INPUT_REASONS, ReasonCode
from groundlock.contracts.response import PublicCitation, PublicResponse, TokenUsage
from groundlock.contracts.validation import ValidationResult

__all__ = ["NO_USAGE", "failed_response", "package_response", "request_summary"]

NO_USAGE = TokenUsage(prompt_tokens=0, completion_tokens=0, total_tokens=0)
"""Usage of a request that never reached a model."""


def package_response(result: ValidationResult) -> PublicResponse:
    """The public response for ``result``; nothing but validated, public data leaves."""
    execution = result.execution
    if execution is None or not execution.attempts:
        usage = NO_USAGE
    else:
        usage = TokenUsage(
            prompt_tokens=execution.prompt_tokens_actual,
            completion_tokens=execution.completion_tokens_actual,
            total_tokens=execution.total_tokens_actual,
        )
    latency = execution.llm_latency_ms if execution is not None else 0.0
    if result.validation_status is not ValidationStatus.PASSED:
        reason = result.failure_reason or ReasonCode.INTERNAL_ERROR
        return failed_response(
            result.request_id,
            reason,
            result.message,
            usage=usage,
            latency_ms=latency,
        )
    citations: tuple[PublicCitation, ...] = ()
    if result.generation_status is GenerationStatus.OK and execution is not None:
        entries = {e.anchor: e for e in execution.prompt.bundle.selected_evidence}
        citations = tuple(
            PublicCitation(
                anchor=anchor,
                knowledge_id=entries[anchor].knowledge_id,
                source_reference=entries[anchor].source_reference,
                event_date=d.isoformat() if (d := entries[anchor].event_date) else None,
                equipment_id=entries[anchor].equipment_id,
            )
            for anchor in result.validated_citations
            if anchor in entries
        )
    return PublicResponse(
        request_id=result.request_id,
        status=result.generation_status,
        answer=result.validated_answer_text,
        citations=citations,
        token_usage=usage,
        latency_ms=latency,
        failure_reason=None,
        failure_message=None,
    )


def failed_response(
    request_id: str | None,
    reason: ReasonCode,
    message: str | None,
    *,
    usage: TokenUsage | None = None,
    latency_ms: float = 0.0,
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
    )


def request_summary(result: ValidationResult | None, response: PublicResponse) -> dict[str, Any]:
    """The structured debug record of one request (``000`` observability minimum set)."""
    execution = result.execution if result is not None else None
    prompt = execution.prompt if execution is not None else None
    bundle = prompt.bundle if prompt is not None else None
    trace = bundle.trace if bundle is not None else None
    metrics = result.grounding_metrics if result is not None else None
    return {
        "request_id": response.request_id,
        "run_id": trace.run_id if trace else None,
        "status": response.status.value,
        "failure_reason": response.failure_reason.value if response.failure_reason else None,
        "assembly_status": bundle.assembly_status.value if bundle else None,
        "assembly_reason": bundle.reason_code.value if bundle and bundle.reason_code else None,
        "generation_status": result.generation_status.value if result else None,
        "validation_status": result.validation_status.value if result else None,
        "policy_version": trace.policy_version if trace else None,
        "policy_sha256": trace.policy_sha256 if trace else None,
        "index_version": trace.index_version if trace else None,
        "embedding_model": trace.embedding_model if trace else None,
        "retrieval_strategy": trace.retrieval_strategy if trace else None,
        "score_normalization": trace.score_normalization if trace else None,
        "access_denied_count": trace.access_denied_count if trace else None,
        "template_version": prompt.template_version if prompt else None,
        "prompt_sha256": prompt.prompt_sha256 if prompt else None,
        "model_name": execution.model_name if execution else None,
        "reported_model_name": execution.reported_model_name if execution else None,
        "response_id": execution.response_id if execution else None,
        "finish_reason": execution.finish_reason.value if execution else None,
        "attempts": execution.attempt_count if execution else 0,
        "latency_ms": round(response.latency_ms, 3),
        "prompt_tokens": response.token_usage.prompt_tokens,
        "completion_tokens": response.token_usage.completion_tokens,
        "total_tokens": response.token_usage.total_tokens,
        "retrieved_k": bundle.metrics.retrieved_k if bundle and bundle.metrics else None,
        "selected_k": len(bundle.selected_evidence) if bundle else None,
        "citation_count": metrics.citation_count if metrics else None,
        "uncited_sentence_count": metrics.uncited_sentence_count if metrics else None,
        "invalid_anchor_count": metrics.invalid_anchor_count if metrics else None,
        "malformed_anchor_count": metrics.malformed_anchor_count if metrics else None,
        "suspicious_new_id_count": len(metrics.suspicious_new_ids) if metrics else None,
        "refusal_detected": metrics.refusal_detected if metrics else None,
        "length_ratio_flag": metrics.length_ratio_flag if metrics else None,
        "firewall_ruleset": result.firewall_ruleset if result else None,
        "firewall_ruleset_sha256": result.firewall_ruleset_sha256 if result else None,
        "flagged": sorted({f.rule for f in result.findings if f.mode == "flag"}) if result else [],
    }
