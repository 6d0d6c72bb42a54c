"""``answer`` and ``judge``: the chain and the firewall as Arrow batch UDFs over DataFrames.

What runs where. The driver only plans: it builds no chain and opens no table. Each Python
worker process builds the chain of a :class:`ChainSpec` once (kept per process, keyed by
the spec) and reuses it for every task Spark gives it, so a policy, a token encoder and a
model client are loaded once per worker, not once per row or batch.

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
The trail then keeps that execution under a run id of its own. A key repeated within a task
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

import gc
import json
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.runnables import RunnableConfig

from groundlock.policies.loader import DEFAULT_POLICY, load_policy

if TYPE_CHECKING:
    import pyarrow as pa
    from langchain_core.language_models import BaseChatModel
    from langchain_core.runnables import RunnableSequence
    from pyspark.sql import DataFrame

    from groundlock.contracts.audit_rows import ValidationRow
    from groundlock.contracts.response import PublicResponse
    from groundlock.policies.model import Policy
    from groundlock.runnables.retrieve import RetrievalFront
    from groundlock.stores.delta import DeltaAuditStore

__all__ = ["RESPONSE_SCHEMA", "VERDICT_SCHEMA", "ChainSpec", "answer", "judge"]

RESPONSE_SCHEMA = (
    "request_id string, run_id string, status string, failure_reason string, "
    "failure_message string, answer string, citations string, confidence string, "
    "model_used string, latency_ms double, resumed boolean"
)
"""The DataFrame ``answer`` returns: one public response per input row (``citations`` is
the public citations as a JSON list; ``resumed`` marks a response read back from the trail,
recorded by an earlier attempt of its task or an earlier run of the job)."""

VERDICT_SCHEMA = (
    "request_id string, validation_status string, generation_status string, "
    "failure_reason string, message string, policy_version string, firewall_ruleset string, "
    "firewall_ruleset_sha256 string, findings string"
)
"""The DataFrame ``judge`` returns: R5's verdict per stored answer (``findings`` as JSON)."""

_NOT_JSON = "bundle: not a JSON object (the row's text is not JSON)"
_REPEATED = "request_id: repeated in this job (another row has the same request_id and run_id)"
_UNRECORDED = "AUDIT_WRITE_FAILED"
_ANSWER_AGAIN = frozenset(
    {
        "RETRIEVAL_FAILED", "MODEL_UNAVAILABLE", "MODEL_DEADLINE_EXCEEDED", "MODEL_RATE_LIMITED",
        "PROVIDER_QUOTA_EXHAUSTED", "PROVIDER_AUTH_FAILED", "MODEL_NOT_FOUND", "MODEL_ERROR",
        "SUPPORT_JUDGE_FAILED", "AUDIT_WRITE_FAILED", "INTERNAL_ERROR",
    }
)  # fmt: skip
"""Failures that say nothing about the request (a model, provider, judge or store fault):
a record of one is answered again on resume, not read back."""


@dataclass(frozen=True)
class ChainSpec:
    """What each worker builds its chain from: picklable, built where it runs.

    ``model`` is a ``provider:model`` string, a picklable callable returning a LangChain
    chat model (a local test double, a configured client), or None for the offline
    extractive model. ``policy`` a built-in name or a policy file's path the workers can
    read (by default the library's default, or ``LEXICAL_POLICY_V1`` over a lexical
    ``index``). ``store`` the audit trail's path or URI (every worker writes to it);
    ``index`` a Delta index (built by ``groundlock index``) for question input.
    """

    policy: str | None = None
    model: str | Callable[[], BaseChatModel] | None = None
    store: str | None = None
    storage_options: dict[str, str] | None = None
    index: str | None = None
    top_k: int = 8
    max_concurrency: int = 4
    """Model calls in flight per worker process."""
    requests_per_second: float | None = None
    """Model calls started per second per worker process (None: unpaced)."""
    key: str = field(init=False, compare=False)
    """Which built chain a worker reuses: drawn for every new spec (``dataclasses.replace``
    included), kept when the spec is pickled to the workers."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", uuid.uuid4().hex)
        if not 1 <= self.max_concurrency <= 256:
            raise ValueError("max_concurrency must be between 1 and 256")
        if self.requests_per_second is not None and not self.requests_per_second > 0:
            raise ValueError("requests_per_second must be positive")
        if not 1 <= self.top_k <= 100:
            raise ValueError("top_k must be between 1 and 100")

    def build(self) -> _Worker:
        """The chain and what goes with it, as a worker builds them (also usable locally)."""
        from groundlock.chains.grounded import grounded_answer_chain  # noqa: PLC0415
        from groundlock.stores.delta import DeltaAuditStore  # noqa: PLC0415

        front = None
        policy_name = self.policy or DEFAULT_POLICY
        if self.index is not None:
            from groundlock.lakehouse import LEXICAL_POLICY, open_lexical_index  # noqa: PLC0415
            from groundlock.runnables.retrieve import RetrievalFront  # noqa: PLC0415

            index = open_lexical_index(self.index, storage_options=self.storage_options)
            front = RetrievalFront.over_index(index, top_k=self.top_k)
            policy_name = self.policy or LEXICAL_POLICY
        policy = load_policy(policy_name)
        # Every worker of a job appends to one trail, and appends are serialised across
        # writers (the key guard): a commit may lose a few races before it lands.
        store = (
            DeltaAuditStore(self.store, self.storage_options, commit_attempts=_COMMIT_ATTEMPTS)
            if self.store is not None
            else None
        )
        chain = grounded_answer_chain(
            model=self._model(policy), policy=policy, store=store, front=front
        )
        return _Worker(chain=chain, store=store, policy=policy, front=front)

    def _model(self, policy: Policy) -> BaseChatModel:
        from groundlock.providers.chat import chat_model_from_spec  # noqa: PLC0415
        from groundlock.providers.extractive import ExtractiveChatModel  # noqa: PLC0415

        if isinstance(self.model, str):
            model = chat_model_from_spec(self.model)
        elif self.model is not None:
            model = self.model()
        else:
            model = ExtractiveChatModel(
                refusal_text=policy.refusal_text, firewall_ruleset=policy.firewall_ruleset
            )
        if self.requests_per_second is None:
            return model
        from langchain_core.rate_limiters import InMemoryRateLimiter  # noqa: PLC0415

        limiter = InMemoryRateLimiter(
            requests_per_second=self.requests_per_second,
            check_every_n_seconds=min(0.1, 0.5 / self.requests_per_second),
            max_bucket_size=1,  # no burst: a worker never starts more than the pace allows
        )
        return model.model_copy(update={"rate_limiter": limiter})


@dataclass(frozen=True, slots=True)
class _Worker:
    """A worker process's chain, with the store, policy and front it was built with."""

    chain: RunnableSequence[Any, Any]
    store: DeltaAuditStore | None
    policy: Policy
    front: RetrievalFront | None


_BUILT: dict[str, _Worker] = {}
_BUILD_LOCK = threading.Lock()
_KEEP_BUILT = 4
"""Chains a worker process keeps: a long-lived worker runs job after job, each with a spec
of its own; the oldest is dropped (and its store closed) when a fifth arrives."""
_COMMIT_ATTEMPTS = 30


def _built(spec: ChainSpec) -> _Worker:
    """This process's chain for ``spec``: built on its first task, reused by the next."""
    with _BUILD_LOCK:
        if spec.key not in _BUILT:
            while len(_BUILT) >= _KEEP_BUILT:
                oldest = _BUILT.pop(next(iter(_BUILT)))
                if oldest.store is not None:
                    oldest.store.close()
            _BUILT[spec.key] = spec.build()
            # The chain lives as long as the worker: out of the collector's sight, so a full
            # collection does not walk it every few large bundles (as groundlock serve does).
            gc.freeze()
        return _BUILT[spec.key]


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

    worker = _built(spec)
    config = RunnableConfig(max_concurrency=spec.max_concurrency)
    schema = _arrow_schema(RESPONSE_SCHEMA)
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
        inputs = [_request(v, i, kind, job) for v, i in zip(values, ids, strict=True)]
        rows: list[dict[str, Any] | None] = [
            _refused_row(item) if isinstance(item, _Refused) else None for item in inputs
        ]
        keys: dict[int, tuple[str, str]] = {}
        for position, item in enumerate(inputs):
            key = _key(item)
            if key is not None and key in seen:
                rows[position] = _refused_row(_Refused(_REPEATED), key)
            elif key is not None:
                seen.add(key)
                keys[position] = key
        if worker.store is not None:
            # A retried task resumes: what an earlier attempt recorded is read back, not
            # answered (nor paid for) again.
            recorded = worker.store.recorded(list(keys.values()))
            for position, key in keys.items():
                if key in recorded and rows[position] is None:
                    rows[position] = _resumed_row(worker, inputs[position], recorded[key])
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


def _resumed_row(worker: _Worker, request: object, row: ValidationRow) -> dict[str, Any] | None:
    """The response a recorded request gave, read back from its trail record; None to answer.

    A record is read back only if it is this request's: R1, R2 and R3 run again (no model)
    and must build the prompt the record names (the same question, evidence and policy),
    and the cited entries must hash to what the record says its caller received. A request
    that failed for a passing reason (a model, provider or store fault) is answered again;
    so is one whose evidence changed since (a re-indexed source). The trail records such
    a new execution under a run id of its own.
    """
    from groundlock.contracts.state import Assembled  # noqa: PLC0415
    from groundlock.core.audit import outcome_sha256  # noqa: PLC0415
    from groundlock.core.evidence_assembly import assemble  # noqa: PLC0415
    from groundlock.core.packaging import confidence_for, public_citations  # noqa: PLC0415
    from groundlock.core.prompt_build import build_prompt  # noqa: PLC0415

    if row.failure_reason in _ANSWER_AGAIN:
        return None
    policy = worker.policy
    retrieval = worker.front.invoke(request) if worker.front is not None else request
    prompted = build_prompt(Assembled.of(assemble(retrieval, policy)), policy)
    if prompted.prompt.prompt_sha256 != row.prompt_sha256:
        return None
    if row.prompt_sha256 is None and prompted.status.value != row.status:
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
        "confidence": confidence_for(evidence, policy).value if ok else None,
        "model_used": row.model_name if row.attempts else None,
        "latency_ms": row.latency_ms,
        "resumed": True,
    }


def _client_fault(reason: str | None) -> bool:
    from groundlock.contracts.reasons import CLIENT_INPUT_REASONS  # noqa: PLC0415

    return reason is not None and reason in {r.value for r in CLIENT_INPUT_REASONS}


@dataclass(frozen=True, slots=True)
class _Refused:
    """A row refused before the chain (not JSON): answered FAILED, never recorded."""

    message: str


def _request(value: object, request_id: object, kind: str, job: str | None) -> object:
    if kind == "question":
        return {"user_question": value, "request_id": request_id, "run_id": job}
    if not isinstance(value, str):
        return _Refused(_NOT_JSON)
    try:
        bundle = json.loads(value)
    except (ValueError, RecursionError):
        return _Refused(_NOT_JSON)
    if job is not None and isinstance(bundle, dict) and bundle.get("run_id") is None:
        bundle["run_id"] = job
    return bundle  # anything else is the chain's to refuse, with its reason


def _refused_row(item: _Refused, key: tuple[str, str] | None = None) -> dict[str, Any]:
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
    schema = _arrow_schema(VERDICT_SCHEMA)
    for batch in batches:
        rows = []
        for text, answer_text in zip(
            batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True
        ):
            request = _request(text, None, "bundle", None)
            if isinstance(request, _Refused) or not isinstance(answer_text, str):
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
    message = request.message if isinstance(request, _Refused) else "answer: not text"
    return {
        "request_id": None, "validation_status": "FAILED", "generation_status": "FAILED",
        "failure_reason": "INPUT_SCHEMA_INVALID", "message": message,
        "policy_version": policy.policy_version, "firewall_ruleset": None,
        "firewall_ruleset_sha256": None, "findings": "[]",
    }  # fmt: skip


def _arrow_schema(ddl: str) -> pa.Schema:
    """The Arrow schema of a DDL string of ours (string, double and boolean columns)."""
    import pyarrow as pa  # noqa: PLC0415

    types = {"string": pa.string(), "double": pa.float64(), "boolean": pa.bool_()}
    return pa.schema(
        [(name, types[kind]) for name, kind in (part.split() for part in ddl.split(","))]
    )
