"""``answer``: the chain over a DataFrame of bundles or questions, exactly once in the trail.

Exactly once in the trail. Spark re-runs a task that failed, and may run a slow one twice
(speculation). Every request is recorded under ``(request_id, run_id)``; the run id is the
job's (``run_id=``, or one drawn on the driver for the job; a bundle's own is kept), so a
re-run of a request has the same key, and the trail keeps the first row of a key
(:class:`~groundlock.DeltaAuditStore`'s key rule, which holds across processes and commits).
A batch's rows are committed before the batch leaves the task (a strict flush), and a
trail that refuses rows fails the task: a task reported done never leaves its rows on a
disk that may go with the executor, and a job never succeeds with requests unrecorded.

A task resumes. Before it answers a batch it reads back what the trail already records for
its keys (what a dead attempt committed, or a whole earlier run of the job), after
committing what a dead attempt on the same host left in its spool. A record is read back,
not answered or paid for again, only if it is this request's: R1-R3 run again with no model
and must build the prompt the record names, and the cited entries must hash to the
outcome the record says its caller received. A record of a passing failure (a model,
provider or store fault) is answered again; so is a request whose evidence has changed.
The trail then keeps that execution under a run id of its own, and a later run reads it
back like a record (the first execution that is this request's and did not fail for a
passing reason), so no run pays for a request twice. A key repeated within a task
is refused (``INPUT_SCHEMA_INVALID``), never answered twice. A request whose bundle has no
usable ``request_id`` cannot be keyed: it is recorded once per execution, as the input it
was. With speculative execution on (Spark's default is off), two live attempts can both
answer a request before either commits; a model that answers differently the second time
leaves that answer under a run id of its own, never lost.

Model calls. ``max_concurrency`` bounds the calls in flight per worker process (LangChain's
own ``batch``), and ``requests_per_second`` paces them (LangChain's ``InMemoryRateLimiter``
on the chat model, shared by every task of the process). Both are per Python worker
process, which in Spark is per task slot (executors x cores): set both as the provider's
quota divided by the slots.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.runnables import RunnableConfig

from groundlock.spark.rows import Refused, arrow_schema, request_of
from groundlock.spark.spec import ChainSpec, Worker, built

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

    from groundlock.contracts.audit_rows import ValidationRow
    from groundlock.contracts.response import PublicResponse
    from groundlock.contracts.state import Prompted
    from groundlock.policies.model import Policy

__all__ = ["RESPONSE_SCHEMA", "answer"]

RESPONSE_SCHEMA = (
    "request_id string, run_id string, status string, failure_reason string, "
    "failure_message string, answer string, citations string, confidence string, "
    "model_used string, latency_ms double, resumed boolean"
)
"""The DataFrame ``answer`` returns: one public response per input row (``citations`` is
the public citations as a JSON list; ``resumed`` marks a response read back from the trail,
recorded by an earlier attempt of its task or an earlier run of the job)."""

_REPEATED = "request_id: repeated in this job (another row has the same request_id and run_id)"
_UNRECORDED = "AUDIT_WRITE_FAILED"
_ANSWER_AGAIN = frozenset(
    {
        "RETRIEVAL_FAILED", "MODEL_UNAVAILABLE", "MODEL_DEADLINE_EXCEEDED", "MODEL_RATE_LIMITED",
        "PROVIDER_QUOTA_EXHAUSTED", "PROVIDER_AUTH_FAILED", "MODEL_NOT_FOUND", "MODEL_ERROR",
        "MODEL_NOT_CONFIGURED", "SUPPORT_JUDGE_FAILED", "AUDIT_WRITE_FAILED", "INTERNAL_ERROR",
    }
)  # fmt: skip
"""Failures that say nothing about the request (a model, provider, judge or store fault):
a record of one is answered again on resume, not read back."""


def answer(
    frame: DataFrame,
    spec: ChainSpec | None = None,
    *,
    column: str = "bundle",
    kind: Literal["bundle", "question"] = "bundle",
    id_column: str = "request_id",
    run_id: str | None = None,
) -> DataFrame:
    """Answer every row of ``frame`` with the chain of ``spec``; a DataFrame of responses.

    ``kind="bundle"``: ``column`` holds retrieval bundles as JSON text (a row that is not
    JSON is answered FAILED ``INPUT_SCHEMA_INVALID`` and never reaches the chain).
    ``kind="question"``: ``column`` holds questions and ``id_column`` their request ids;
    ``spec.index`` is retrieved from. ``run_id`` names this job in the trail (a bundle's
    own ``run_id`` is kept): pass the same one to a re-run of the whole job to record each
    request once across both. Lazy, like any transformation: nothing runs before an action.
    """
    spec = spec or ChainSpec()
    if kind == "question" and spec.index is None:
        raise ValueError("question input needs an index to retrieve from (ChainSpec.index)")
    columns = set(frame.columns)
    needed = [column] + ([id_column] if kind == "question" else [])
    missing = [name for name in needed if name not in columns]
    if missing:
        raise ValueError(f"the DataFrame has no column {missing[0]!r}")
    job = run_id or f"spark-{uuid.uuid4().hex[:16]}"
    picked = frame.select(*needed)

    def work(batches: Iterable[pa.RecordBatch]) -> Iterable[pa.RecordBatch]:
        return _answer_batches(iter(batches), spec, kind, job)

    return picked.mapInArrow(work, RESPONSE_SCHEMA)


def _answer_batches(
    batches: Iterator[pa.RecordBatch], spec: ChainSpec, kind: str, job: str
) -> Iterator[pa.RecordBatch]:
    import pyarrow as pa  # noqa: PLC0415  (in the worker: the spark extra brings it)

    from groundlock.stores.sink import AuditUnavailable  # noqa: PLC0415

    worker = built(spec)
    config = RunnableConfig(max_concurrency=spec.max_concurrency)
    schema = arrow_schema(RESPONSE_SCHEMA)
    seen: set[tuple[str, str]] = set()
    if worker.store is not None:
        problem = worker.store.problem()
        if problem is not None:  # fail the task before any model is paid for
            raise AuditUnavailable(problem)
        # What a dead attempt on this host left in its spool is committed first, so that
        # it is read back below instead of being answered again.
        worker.store.recover()
    for batch in batches:
        values = batch.column(0).to_pylist()
        ids = batch.column(1).to_pylist() if kind == "question" else [None] * len(values)
        inputs = [request_of(v, i, kind, job) for v, i in zip(values, ids, strict=True)]
        rows: list[dict[str, Any] | None] = [
            _refused_row(item) if isinstance(item, Refused) else None for item in inputs
        ]
        keys: dict[int, tuple[str, str]] = {}
        for position, item in enumerate(inputs):
            key = _key(item)
            if key is not None and key in seen:
                rows[position] = _refused_row(Refused(_REPEATED), key)
            elif key is not None:
                seen.add(key)
                keys[position] = key
        if worker.store is not None:
            # A retried task resumes: what an earlier attempt recorded is read back, not
            # answered (nor paid for) again.
            executions = worker.store.executions(list(keys.values()))
            candidates = {
                p: kept
                for p, key in keys.items()
                if rows[p] is None and (kept := [e for e in executions.get(key, ()) if _final(e)])
            }
            # Question input: the evidence is retrieved again to check a record against it,
            # through the front's own batch (max_concurrency searches at once).
            requests: list[Any] = [inputs[p] for p in candidates]
            retrieved: list[object] = (
                list(worker.front.batch(requests, config=config))
                if worker.front is not None
                else requests
            )
            for (position, kept), retrieval in zip(candidates.items(), retrieved, strict=True):
                resumed = _resumed_row(worker, retrieval, kept)
                if resumed is not None:
                    # The request's own run id, whichever execution is read back: the one
                    # the job answers under (a re-execution's is the trail's own).
                    resumed["run_id"] = keys[position][1]
                rows[position] = resumed
        pending = [i for i, row in enumerate(rows) if row is None]
        answered = worker.chain.batch([inputs[i] for i in pending], config=config)
        for position, response in zip(pending, answered, strict=True):
            rows[position] = _response_row(response, inputs[position])
        if worker.store is not None:
            if any(row and row["failure_reason"] == _UNRECORDED for row in rows):
                # The trail refused rows: fail the task (Spark retries it) rather than let
                # a job succeed with requests answered and not recorded.
                raise AuditUnavailable("the audit trail refused this batch's rows")
            worker.store.flush(strict=True)  # this batch's rows are in the trail before it leaves
        yield pa.RecordBatch.from_pylist(rows, schema=schema)


def _key(request: object) -> tuple[str, str] | None:
    """The trail key a request will be recorded under, if it has a valid one."""
    from groundlock.core.intake import salvage_identity  # noqa: PLC0415

    if not isinstance(request, dict):
        return None
    request_id, run_id = salvage_identity(request)
    if request_id is None or run_id is None:
        return None
    return (request_id, run_id)


def _final(execution: ValidationRow) -> bool:
    """Whether a recorded execution may be read back: it did not fail for a passing reason."""
    return execution.failure_reason not in _ANSWER_AGAIN


def _resumed_row(
    worker: Worker, retrieval: object, executions: Sequence[ValidationRow]
) -> dict[str, Any] | None:
    """The response a recorded request gave, read back from the trail; None to answer it.

    ``retrieval`` is R2's input: the request's bundle, or what R1 retrieved for its
    question; ``executions`` its recorded executions, the record first (as
    :meth:`~groundlock.DeltaAuditStore.executions` returns them). The first that is this
    request's is read back: R2 and R3 run again (no model) and must build the prompt it
    names (the same question, evidence and policy), and its cited entries must hash to
    what it says its caller received. An execution that failed for a passing reason (a
    model, provider or store fault) is never read back. So a request answered again after
    such a failure, or because its evidence changed (a re-indexed source), is read back
    from that later execution, which the trail keeps under a run id of its own, and a job
    run a third time pays for neither again.
    """
    from groundlock.contracts.state import Assembled  # noqa: PLC0415
    from groundlock.core.evidence_assembly import assemble  # noqa: PLC0415
    from groundlock.core.prompt_build import build_prompt  # noqa: PLC0415

    policy = worker.policy
    prompted = build_prompt(Assembled.of(assemble(retrieval, policy)), policy)
    for execution in executions:
        if _final(execution):
            row = _read_back(prompted, execution, policy)
            if row is not None:
                return row
    return None


def _read_back(prompted: Prompted, row: ValidationRow, policy: Policy) -> dict[str, Any] | None:
    """``row`` as the response it recorded, if ``prompted`` is what it was built from."""
    from groundlock.contracts.enums import GenerationStatus  # noqa: PLC0415
    from groundlock.core.audit import outcome_sha256  # noqa: PLC0415
    from groundlock.core.packaging import public_citations, response_confidence  # noqa: PLC0415

    if prompted.prompt.prompt_sha256 != row.prompt_sha256:
        return None
    if row.prompt_sha256 is None and _decided(prompted) != (row.status, row.failure_reason):
        return None  # no prompt either way: R2 or R3 decided, and must decide alike again
    evidence = prompted.bundle.selected_evidence
    by_anchor = {entry.anchor: entry for entry in evidence}
    anchors = row.validated_citations
    cited = tuple(by_anchor[a].chunk_id for a in anchors if a in by_anchor)
    answer_text = row.validated_answer_text
    if outcome_sha256(row.status, row.failure_reason, answer_text, cited) != row.outcome_sha256:
        return None
    ok = row.status == "OK"
    citations = public_citations(evidence, anchors, policy) if ok else ()
    return {
        "request_id": row.request_id,
        "run_id": row.run_id,
        "status": row.status,
        "failure_reason": row.failure_reason,
        "failure_message": row.message if _client_fault(row.failure_reason) else None,
        "answer": answer_text or "",
        "citations": json.dumps([c.model_dump(mode="json") for c in citations]),
        "confidence": c.value
        if (c := response_confidence(GenerationStatus(row.status), evidence, policy))
        else None,
        "model_used": row.model_name if row.attempts else None,
        "latency_ms": row.latency_ms,
        "resumed": True,
    }


def _decided(prompted: Prompted) -> tuple[str, str | None]:
    """The status and public failure reason of a request R2 or R3 decided (no prompt).

    A refusal (NO_EVIDENCE) carries no public failure reason, whatever its cause.
    """
    outcome = prompted.outcome
    failed = outcome.status.value == "FAILED"
    return outcome.status.value, outcome.reason.value if failed and outcome.reason else None


def _client_fault(reason: str | None) -> bool:
    from groundlock.contracts.reasons import CLIENT_INPUT_REASONS  # noqa: PLC0415

    return reason is not None and reason in {r.value for r in CLIENT_INPUT_REASONS}


def _refused_row(item: Refused, key: tuple[str, str] | None = None) -> dict[str, Any]:
    return {
        "request_id": key[0] if key else None, "run_id": key[1] if key else None,
        "status": "FAILED",
        "failure_reason": "INPUT_SCHEMA_INVALID", "failure_message": item.message,
        "answer": "", "citations": "[]", "confidence": None, "model_used": None,
        "latency_ms": None, "resumed": False,
    }  # fmt: skip


def _response_row(item: PublicResponse, request: object) -> dict[str, Any]:
    run_id = request.get("run_id") if isinstance(request, dict) else None
    return {
        "request_id": item.request_id,
        "run_id": run_id if isinstance(run_id, str) else None,
        "status": item.status.value,
        "failure_reason": item.failure_reason.value if item.failure_reason else None,
        "failure_message": item.failure_message,
        "answer": item.answer,
        "citations": json.dumps([c.model_dump(mode="json") for c in item.citations]),
        "confidence": item.confidence.value if item.confidence else None,
        "model_used": item.model_used,
        "latency_ms": item.latency_ms,
        "resumed": False,
    }
