"""Valid audit rows, so each test states only the field it is about."""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime
from typing import Any

from groundlock.stores import QueryRow, ValidationRow


def validation_row(**fields: Any) -> ValidationRow:
    """A PASSED OK validation row; keyword arguments override fields."""
    row: dict[str, Any] = {
        "record_id": uuid.uuid4().hex,
        "timestamp_utc": datetime.now(UTC),
        "request_id": "req-1",
        "run_id": "run-1",
        "status": "OK",
        "generation_status": "OK",
        "validation_status": "PASSED",
        "failure_reason": None,
        "message": None,
        "assembly_status": "OK",
        "assembly_reason": None,
        "sentence_count": 2,
        "citation_count": 2,
        "uncited_sentence_count": 0,
        "invalid_anchor_count": 0,
        "malformed_anchor_count": 0,
        "suspicious_new_ids": (),
        "refusal_detected": False,
        "length_ratio_flag": False,
        "validated_citations": ("C0", "C1"),
        "validated_answer_text": "Replace the filter [C0]. Check the seal [C1].",
        "model_provider": "offline",
        "model_name": "extractive",
        "reported_model_name": "extractive",
        "response_id": None,
        "embedding_model": "emb",
        "index_version": "idx",
        "policy_version": "R2_POLICY_V1",
        "policy_sha256": "0" * 64,
        "template_version": "prompt_template_v1",
        "template_sha256": "1" * 64,
        "prompt_sha256": "2" * 64,
        "retrieved_k": 3,
        "selected_k": 2,
        "attempts": 1,
        "latency_ms": 1.5,
        "prompt_tokens": 100,
        "completion_tokens": 20,
        "total_tokens": 120,
        "groundlock_version": "0.1.0",
    }
    row.update(fields)
    if row["validation_status"] != "PASSED" and "validated_answer_text" not in fields:
        row["validated_answer_text"] = None
    row.setdefault("outcome_sha256", outcome(row["status"], row["failure_reason"]))
    return ValidationRow.model_validate(row)


def query_row(**fields: Any) -> QueryRow:
    """The query-log row matching :func:`validation_row`."""
    row: dict[str, Any] = {
        "record_id": uuid.uuid4().hex,
        "timestamp_utc": datetime.now(UTC),
        "request_id": "req-1",
        "run_id": "run-1",
        "requester_id": None,
        "requester_role": None,
        "retrieval_strategy": None,
        "top_k": 3,
        "score_normalization": None,
        "access_denied_count": None,
        "retrieved_chunk_ids": ("a", "b", "c"),
        "selected_chunk_ids": ("a", "b"),
        "cited_chunk_ids": ("a", "b"),
        "status": "OK",
        "failure_reason": None,
        "latency_ms": 1.5,
        "retrieval_latency_ms": None,
    }
    row.update(fields)
    row.setdefault("outcome_sha256", outcome(row["status"], row["failure_reason"]))
    return QueryRow.model_validate(row)


def outcome(status: str, reason: str | None) -> str:
    """A stand-in outcome hash: the same for the two rows of one outcome, 64 hex digits."""
    return hashlib.sha256(f"{status}:{reason}".encode()).hexdigest()
