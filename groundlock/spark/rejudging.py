"""``judge``: R5's verdict under a policy on every stored answer of a DataFrame, no model."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from groundlock.policies.loader import DEFAULT_POLICY, load_policy
from groundlock.spark.rows import Refused, arrow_schema, request_of

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

    from groundlock.policies.model import Policy

__all__ = ["VERDICT_SCHEMA", "judge"]

VERDICT_SCHEMA = (
    "request_id string, validation_status string, generation_status string, "
    "failure_reason string, message string, policy_version string, firewall_ruleset string, "
    "firewall_ruleset_sha256 string, findings string"
)
"""The DataFrame ``judge`` returns: R5's verdict per stored answer (``findings`` as JSON)."""


def judge(
    frame: DataFrame,
    policy: str = DEFAULT_POLICY,
    *,
    bundle_column: str = "bundle",
    answer_column: str = "answer",
) -> DataFrame:
    """R5's verdict under ``policy`` on every stored answer of ``frame``; no model is called.

    Each row holds the bundle the answer was given for (JSON text) and the answer's text;
    the bundle goes through R2 and R3 under ``policy`` as the chain would, then the answer
    through the firewall (:func:`~groundlock.validate_text`). Compare the verdicts with the
    recorded ones to measure what a new policy or ruleset would change.
    """
    missing = [name for name in (bundle_column, answer_column) if name not in frame.columns]
    if missing:
        raise ValueError(f"the DataFrame has no column {missing[0]!r}")
    loaded = load_policy(policy)  # a bad name fails here, on the driver, not in every task
    if loaded.support_judge is not None:
        raise ValueError(
            f"{loaded.policy_version} asks a support judge, which judge() does not call: "
            "re-judge under a policy without one, or answer again with answer()"
        )

    def work(batches: Iterable[pa.RecordBatch]) -> Iterable[pa.RecordBatch]:
        return _judge_batches(iter(batches), policy)

    return frame.select(bundle_column, answer_column).mapInArrow(work, VERDICT_SCHEMA)


def _judge_batches(batches: Iterator[pa.RecordBatch], policy_name: str) -> Iterator[pa.RecordBatch]:
    import pyarrow as pa  # noqa: PLC0415

    from groundlock.core.written_answer import validate_text  # noqa: PLC0415

    policy = load_policy(policy_name)
    schema = arrow_schema(VERDICT_SCHEMA)
    for batch in batches:
        rows = []
        for text, answer_text in zip(
            batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True
        ):
            request = request_of(text, None, "bundle", None)
            if isinstance(request, Refused) or not isinstance(answer_text, str):
                rows.append(_refused_verdict(policy, request))
                continue
            verdict = validate_text(answer_text, request, policy)
            rows.append(
                {
                    "request_id": verdict.request_id,
                    "validation_status": verdict.validation_status.value,
                    "generation_status": verdict.generation_status.value,
                    "failure_reason": verdict.failure_reason.value
                    if verdict.failure_reason
                    else None,
                    "message": verdict.message,
                    "policy_version": policy.policy_version,
                    "firewall_ruleset": verdict.firewall_ruleset,
                    "firewall_ruleset_sha256": verdict.firewall_ruleset_sha256,
                    "findings": json.dumps([f.model_dump(mode="json") for f in verdict.findings]),
                }
            )
        yield pa.RecordBatch.from_pylist(rows, schema=schema)


def _refused_verdict(policy: Policy, request: object) -> dict[str, Any]:
    message = request.message if isinstance(request, Refused) else "answer: not text"
    return {
        "request_id": None, "validation_status": "FAILED", "generation_status": "FAILED",
        "failure_reason": "INPUT_SCHEMA_INVALID", "message": message,
        "policy_version": policy.policy_version, "firewall_ruleset": None,
        "firewall_ruleset_sha256": None, "findings": "[]",
    }  # fmt: skip
