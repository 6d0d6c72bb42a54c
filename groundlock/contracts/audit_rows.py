"""The audit tables' rows: the audit trail's contract, one pydantic model per table.

A row model is the single source of truth for its table: its fields, in order, are the
table's columns (the Arrow schema is derived from them in :mod:`groundlock.stores.arrow`,
so the two cannot drift). Rows are validated *strictly* before any store sees them,
because delta-rs casts to the table's types on append (``1.7`` would land in an integer
column as ``1``): no coercion of any kind, no unknown field, no missing field, and
timestamps must be timezone-aware UTC (a naive one would create a ``timestamp_ntz`` column
and raise the table protocol past what ordinary Spark readers open). They live with the
contracts, not the storage: the pure core builds them, any audit sink stores them.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import Annotated, ClassVar, Self, get_args, get_origin

from pydantic import AfterValidator, BaseModel, ConfigDict, StringConstraints, model_validator
from pydantic import Field as PydanticField

__all__ = [
    "EvidenceRow",
    "FeedbackRow",
    "QueryRow",
    "TableRow",
    "UtcTimestamp",
    "ValidationRow",
]


def _utc(value: datetime) -> datetime:
    if value.tzinfo is None or value.utcoffset() != timedelta(0):
        raise ValueError("timestamps must be timezone-aware UTC")
    return value


UtcTimestamp = Annotated[datetime, AfterValidator(_utc)]
"""A timezone-aware UTC ``datetime`` (stored as Arrow ``timestamp[us, UTC]``)."""

_Text = Annotated[str, StringConstraints(max_length=100_000)]
_Id = Annotated[str, StringConstraints(min_length=1, max_length=512)]
_Count = Annotated[int, PydanticField(ge=0, le=2**63 - 1)]
"""Bounded like the Arrow int64 it is stored as: a larger value would pass the row check
and then fail every commit of its segment."""
_Ms = Annotated[float, PydanticField(ge=0, allow_inf_nan=False)]


class TableRow(BaseModel):
    """A row of one audit table: strict, closed, frozen."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    table: ClassVar[str]
    """The table's directory name under the store's root."""
    key_fields: ClassVar[tuple[str, ...]] = ()
    """The columns that identify a row; empty when every row is distinct (feedback)."""
    outcome_fields: ClassVar[tuple[str, ...]] = ()
    """The columns that say what the caller received: a second row of the same key that
    differs in them is reported when it is dropped."""

    record_id: _Id
    """This row's own id (128 random bits, hex); distinct even for rows with no request_id."""
    timestamp_utc: UtcTimestamp

    def key(self) -> tuple[str, str] | None:
        """``(request_id, run_id)`` for a keyed table; None when the row has no key."""
        return None

    @classmethod
    def fitted(cls, data: dict[str, object]) -> Self:
        """The row of ``data``, with every value cut to what its column holds.

        A request's rows must be written whatever a provider reported: a model name or a
        response id of 600 characters, a token count past int64, an answer past the text
        bound. Such a value would fail the row and leave the request with no record at all;
        here a string keeps its head and ends with ``…#`` and 12 hex digits of its sha256,
        and a count too large to store becomes null (unknown). Values that fit are unchanged.
        """
        fitted = dict(data)
        for name, field in cls.model_fields.items():
            value = fitted.get(name)
            annotation: object = field.annotation
            if field.metadata:
                annotation = Annotated[field.annotation, *field.metadata]
            limit = _max_length(annotation)
            nullable = type(None) in get_args(field.annotation)
            if value == "" and nullable and _non_empty(annotation):
                fitted[name] = None  # (an empty model name or response id: unknown)
            elif isinstance(value, str) and limit is not None:
                fitted[name] = _cut(value, limit)
            elif isinstance(value, tuple) and limit is not None:
                fitted[name] = tuple(_cut(v, limit) if isinstance(v, str) else v for v in value)
            elif isinstance(value, int) and not isinstance(value, bool) and value > 2**63 - 1:
                fitted[name] = None
        return cls.model_validate(fitted)

    def outcome(self) -> tuple[object, ...]:
        """The values of :attr:`outcome_fields`."""
        return tuple(getattr(self, name) for name in self.outcome_fields)


def _max_length(annotation: object) -> int | None:
    """The max_length of the string constraints in an annotation (optional, or a tuple's)."""
    if get_origin(annotation) is Annotated:
        for item in get_args(annotation)[1:]:
            if isinstance(item, StringConstraints) and item.max_length is not None:
                return item.max_length
    for argument in get_args(annotation):
        found = _max_length(argument)
        if found is not None:
            return found
    return None


def _non_empty(annotation: object) -> bool:
    """Whether the annotation's string constraints forbid the empty string."""
    if get_origin(annotation) is Annotated:
        for item in get_args(annotation)[1:]:
            if isinstance(item, StringConstraints) and (item.min_length or 0) > 0:
                return True
    return any(_non_empty(argument) for argument in get_args(annotation))


def _cut(value: str, limit: int) -> str:
    if len(value) <= limit:
        return value
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{value[: limit - 14]}…#{digest}"


class _RequestRow(TableRow):
    key_fields: ClassVar[tuple[str, ...]] = ("request_id", "run_id")
    outcome_fields: ClassVar[tuple[str, ...]] = ("outcome_sha256",)

    request_id: _Id | None
    """Null only for input too malformed to carry a request_id (never deduplicated)."""
    run_id: _Id | None

    def key(self) -> tuple[str, str] | None:
        if self.request_id is None:
            return None
        return (self.request_id, self.run_id or "")


class ValidationRow(_RequestRow):
    """One validation result: ``000``'s validation table, plus the hashes that replay it."""

    table: ClassVar[str] = "validations"

    status: _Id
    """The public status (OK, NO_EVIDENCE, FAILED)."""
    generation_status: _Id
    validation_status: _Id
    failure_reason: _Id | None
    message: _Text | None
    """Internal detail of a failure (which field, which sentence); never quotes the answer."""
    assembly_status: _Id | None
    assembly_reason: _Id | None
    sentence_count: _Count
    citation_count: _Count
    uncited_sentence_count: _Count
    invalid_anchor_count: _Count
    malformed_anchor_count: _Count
    suspicious_new_ids: tuple[_Text, ...]
    refusal_detected: bool
    length_ratio_flag: bool
    validated_citations: tuple[_Id, ...]
    validated_answer_text: _Text | None
    """The answer exactly as validated: present only when validation PASSED."""
    model_provider: _Id | None
    model_name: _Id | None
    reported_model_name: _Id | None
    response_id: _Id | None
    embedding_model: _Id | None
    index_version: _Id | None
    policy_version: _Id | None
    policy_sha256: _Id | None
    template_version: _Id | None
    template_sha256: _Id | None
    prompt_sha256: _Id | None
    retrieved_k: _Count | None
    selected_k: _Count | None
    attempts: _Count
    latency_ms: _Ms
    prompt_tokens: _Count | None
    completion_tokens: _Count | None
    total_tokens: _Count | None
    groundlock_version: _Id
    firewall_ruleset: _Id | None = None
    """The R5 ruleset that judged the answer (null on rows written before rulesets)."""
    firewall_ruleset_sha256: _Id | None = None
    firewall_findings: tuple[_Text, ...] | None = None
    """Every finding of the firewall, enforced or flagged, as ``rule:REASON:mode:sentence``
    (sentence ``-`` for the whole answer), in rule-table order."""
    instruction_anchors: tuple[_Id, ...] | None = None
    """Evidence entries R2 found addressing the model (injected instructions)."""
    judge: _Id | None = None
    """The support judge that judged the answer (the pinned model or the runnable), if any."""
    judge_prompt_sha256: _Id | None = None
    judge_verdicts: tuple[_Text, ...] | None = None
    """The judge's verdicts as ``sentence:supported|unsupported:score``, or its error."""
    query_type: _Id | None = None
    """The bundle's query type (``factual``, ``summary``, ``compare``), as given."""
    history_turns_given: _Count | None = None
    """Prior turns the bundle brought (null on rows written before history windows)."""
    history_turns_kept: _Count | None = None
    """Of those, the newest the policy's window let the prompt show."""
    outcome_sha256: _Id | None = None
    """What the caller received (status, reason, answer, cited chunks), hashed; the same in
    both rows of a request. A later execution under a stored key that received something
    else is recorded under ``<run_id>~<first 16 hex digits>``, never dropped."""
    stream_mode: _Id | None = None
    """``buffered`` or ``progressive`` for a streamed request; null for ``invoke``."""
    streamed_before_verdict: tuple[_Text, ...] | None = None
    """A progressive stream's sentences that reached the reader before the final verdict,
    as emitted: on a FAILED row, what the reader was shown and told to withdraw."""
    invalid_citations: tuple[_Id, ...] | None = None
    """Well-formed markers of the answer that named no evidence entry of the request, as
    written without brackets (``IPC_421_0``): what an auditor looks for on an
    ``INVALID_CITATION_REFERENCE`` row. The first 16 only, each cut to 512 characters
    (``invalid_anchor_count`` counts them all): a marker is model-written text, and a
    ``[Source: …]`` one can hold a sentence of the withheld answer. Null on rows written
    before the column; malformed tokens are counted only (``malformed_anchor_count``)."""

    @model_validator(mode="after")
    def _text_only_when_passed(self) -> Self:
        if (self.validated_answer_text is not None) != (self.validation_status == "PASSED"):
            raise ValueError("validated_answer_text is present exactly when validation PASSED")
        return self


class QueryRow(_RequestRow):
    """One request as a query log entry (``003``'s ``serving.rag_queries``)."""

    table: ClassVar[str] = "queries"

    requester_id: _Id | None
    requester_role: _Id | None
    retrieval_strategy: _Id | None
    top_k: _Count | None
    score_normalization: _Id | None
    """How the retriever's raw scores were mapped to similarities in [0, 1]."""
    access_denied_count: _Count | None
    """Rows the requester was not allowed to see, withheld before assembly."""
    retrieved_chunk_ids: tuple[_Id, ...]
    """Every row the retriever returned (after access filtering), in rank order."""
    selected_chunk_ids: tuple[_Id, ...]
    """The rows admitted as evidence, in anchor order."""
    cited_chunk_ids: tuple[_Id, ...]
    """The chunks the validated answer cites, in order of first citation."""
    status: _Id
    failure_reason: _Id | None
    latency_ms: _Ms
    retrieval_latency_ms: _Ms | None
    outcome_sha256: _Id | None = None
    """As the validation row's: the two rows of one request carry the same."""
    response_text: _Text | None = None
    """The ``answer`` of the public response, exactly (``003``'s response text): the
    validated answer for OK, the policy's refusal for NO_EVIDENCE, empty for FAILED. Never
    the model's rejected text (that is only in the opt-in evidence archive). Null only in
    rows written before the column existed."""


class FeedbackRow(TableRow):
    """A reader's rating of one answer."""

    table: ClassVar[str] = "feedback"

    request_id: _Id
    rating: Annotated[int, PydanticField(ge=1, le=5)]
    """1 (wrong or useless) to 5 (correct and complete)."""
    comment: Annotated[str, StringConstraints(max_length=4000)] | None


class EvidenceRow(TableRow):
    """One request's evidence, for the opt-in archive (never the trail, never a response).

    What replays R2-R5 without the model: R2's input as it was read, the evidence exactly as
    the prompt held it (after R2 and PB4's pruning), the prompt messages and the model's raw
    text. The text columns
    are unbounded on purpose: a cut prompt or answer could not prove its sha256 again, and
    :meth:`TableRow.fitted` is never applied to this row.
    """

    table: ClassVar[str] = "evidence"

    request_id: _Id | None
    run_id: _Id | None
    status: _Id
    """The request's final status, as the trail records it."""
    failure_reason: _Id | None
    policy_version: _Id
    policy_sha256: _Id
    prompt_sha256: _Id | None
    """Null when no prompt was built (a FAILED or NO_EVIDENCE request)."""
    model_name: _Id | None
    retrieval_bundle_json: str | None = None
    """R2's input (the ``RetrievalBundle``) as JSON: replay runs R2 again from it, so a
    policy's admission gates are measured too. Null when R2 refused the input, and in rows
    archived before the column existed."""
    answer_bundle_json: str
    """The ``AnswerBundle`` the prompt was built from, as JSON."""
    prompt_messages_json: str | None
    """The prompt messages as a JSON list of ``[role, content]``."""
    raw_model_text: str
    """The model's reply exactly as received (R5's input)."""
    groundlock_version: _Id

    def key(self) -> tuple[str, str] | None:
        """``(request_id, run_id)``, the key it shares with the trail's rows."""
        if self.request_id is None:
            return None
        return (self.request_id, self.run_id or "")
