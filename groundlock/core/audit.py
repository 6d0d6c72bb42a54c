"""The audit rows of one request, derived from R5's verdict (pure: no I/O).

The validation row is ``000``'s validation table plus what replays the request (policy,
template and prompt hashes, model and response ids); the query row is ``003``'s query log.
Both are computed from the :class:`~groundlock.ValidationResult` and from the public response
R6 will build from it, so the audit trail records exactly what the caller receives.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from datetime import UTC, datetime

from groundlock.contracts.audit_rows import QueryRow, ValidationRow
from groundlock.contracts.enums import ValidationStatus
from groundlock.contracts.state import Judged
from groundlock.contracts.validation import FirewallFinding, ValidationResult
from groundlock.core.packaging import package_response, request_summary
from groundlock.policies.model import Policy

__all__ = ["REQUESTER_KEYS", "audit_rows", "finding_label", "outcome_sha256"]

REQUESTER_KEYS = ("requester_id", "requester_role", "retrieval_strategy")
"""Run-config metadata keys copied into the query log (a server sets them per request)."""

_MAX_METADATA = 512
_MAX_INVALID_KEPT = 16
"""Most invalid citations a validation row names (the first, in order of use): the
``invalid_anchor_count`` column counts them all. A marker is model-written text, and under
``[Source: …]`` a single one can hold a sentence of the withheld answer: the row keeps enough
for an auditor to see what was cited, not an answer's worth of markers."""


def audit_rows(
    state: Judged,
    metadata: Mapping[str, object],
    *,
    version: str,
    policy: Policy,
    streamed: tuple[str, ...] | None = None,
) -> tuple[ValidationRow, QueryRow]:
    """The validation and query rows of ``state`` (judged under ``policy``), stamped now.

    ``streamed``: for a streamed request, the sentences emitted before the final verdict
    (empty under a buffered policy); None for ``invoke``.
    """
    response = package_response(state, policy)
    summary = request_summary(state, response)
    bundle, prompt, execution, result = (
        state.bundle,
        state.prompt,
        state.execution,
        state.validation,
    )
    trace, metrics = bundle.trace, result.grounding_metrics
    now = datetime.now(UTC)
    shared = {
        # A random id per request; the two rows live in different tables.
        "record_id": os.urandom(16).hex(),
        "timestamp_utc": now,
        "request_id": summary["request_id"],
        "run_id": summary["run_id"],
        "status": summary["status"],
        "failure_reason": summary["failure_reason"],
        "latency_ms": float(summary["latency_ms"]),
    }
    passed = result.validation_status is ValidationStatus.PASSED
    selected = bundle.selected_evidence
    by_anchor = {entry.anchor: entry.chunk_id for entry in selected}
    cited = tuple(by_anchor[a] for a in result.validated_citations if a in by_anchor)
    answer = result.validated_answer_text if passed else None
    shared["outcome_sha256"] = outcome_sha256(
        summary["status"], summary["failure_reason"], answer, cited
    )
    validation = ValidationRow.fitted(
        {
            **{name: summary[name] for name in _SUMMARY_COLUMNS},
            **shared,
            "message": result.message,
            "sentence_count": metrics.sentence_count,
            "suspicious_new_ids": metrics.suspicious_new_ids,
            "validated_citations": result.validated_citations,
            "validated_answer_text": answer,
            "model_provider": execution.pinned.provider if execution.pinned else None,
            "template_sha256": prompt.template_sha256,
            "groundlock_version": version,
            "firewall_ruleset": result.firewall_ruleset,
            "firewall_ruleset_sha256": result.firewall_ruleset_sha256,
            "firewall_findings": tuple(finding_label(f) for f in result.findings),
            **_judge_columns(result),
            "instruction_anchors": bundle.metrics.instruction_anchors if bundle.metrics else None,
            "query_type": bundle.query_type,
            "history_turns_given": len(bundle.history),
            "history_turns_kept": prompt.history_turns_kept,
            "stream_mode": policy.stream_mode if streamed is not None else None,
            "streamed_before_verdict": streamed or None,
            "invalid_citations": result.invalid_citations[:_MAX_INVALID_KEPT],
        }
    )
    dropped = bundle.metrics.dropped_rows if bundle.metrics else ()
    ranked = sorted(
        [(entry.rank, entry.chunk_id) for entry in selected]
        + [(row.rank, row.chunk_id) for row in dropped]
    )
    query = QueryRow.fitted(
        {
            **shared,
            **{key: _text(metadata.get(key)) for key in REQUESTER_KEYS},
            # A server's metadata is the server's word; the bundle's is the retriever's
            # claim (a served bundle comes from the client), so it only fills a gap.
            "retrieval_strategy": _text(metadata.get("retrieval_strategy"))
            or summary["retrieval_strategy"],
            "score_normalization": summary["score_normalization"],
            "access_denied_count": summary["access_denied_count"],
            "top_k": trace.retrieval_top_k,
            "retrieved_chunk_ids": tuple(chunk_id for _, chunk_id in ranked),
            "selected_chunk_ids": tuple(entry.chunk_id for entry in selected),
            "cited_chunk_ids": cited,
            "retrieval_latency_ms": trace.retrieval_latency_ms,
            # What R6 hands the caller, never the model's raw text: a FAILED response's
            # answer is empty, so a rejected answer cannot reach the query log.
            "response_text": response.answer,
        }
    )
    return validation, query


_SUMMARY_COLUMNS = (
    "generation_status",
    "validation_status",
    "assembly_status",
    "assembly_reason",
    "citation_count",
    "uncited_sentence_count",
    "invalid_anchor_count",
    "malformed_anchor_count",
    "refusal_detected",
    "length_ratio_flag",
    "model_name",
    "reported_model_name",
    "response_id",
    "embedding_model",
    "index_version",
    "policy_version",
    "policy_sha256",
    "template_version",
    "prompt_sha256",
    "retrieved_k",
    "selected_k",
    "attempts",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
)


def outcome_sha256(
    status: object, reason: object, answer: str | None, cited: tuple[str, ...]
) -> str:
    """What the caller received, hashed: the same in both rows of a request.

    Also what the Spark runner checks before it serves a request back from the trail: the
    entries it would show must hash to what the caller of the recorded execution got.
    """
    received = json.dumps([status, reason, answer, list(cited)], ensure_ascii=False)
    return hashlib.sha256(received.encode()).hexdigest()


def _judge_columns(result: ValidationResult) -> dict[str, object]:
    record = result.judge
    if record is None:
        return {"judge": None, "judge_prompt_sha256": None, "judge_verdicts": None}
    verdicts = tuple(
        f"{v.sentence}:{'supported' if v.supported else 'unsupported'}:{v.score:.3f}"
        for v in record.verdicts
    )
    return {
        "judge": record.judge[:512],
        "judge_prompt_sha256": record.prompt_sha256,
        "judge_verdicts": (*verdicts, f"error:{record.error}") if record.error else verdicts,
    }


def finding_label(finding: FirewallFinding) -> str:
    """One finding as the audit row and the log line carry it: ``rule:REASON:mode:sentence``."""
    where = "-" if finding.sentence is None else str(finding.sentence)
    return f"{finding.rule}:{finding.reason.value}:{finding.mode}:{where}"


def _text(value: object) -> str | None:
    # Identity metadata comes from a server or a caller; only short strings are recorded.
    if isinstance(value, str) and 0 < len(value) <= _MAX_METADATA:
        return value
    return None
