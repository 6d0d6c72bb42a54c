"""The R2 output contract: the AnswerBundle consumed by the prompt builder and the validator.

The bundle checks its own invariants (``001`` R2.0B hard-fail conditions) when it is built:
an OK bundle has evidence, a rendered block that is exactly its entries, anchors C0..Cn-1 in
order and the trace fields; a non-OK bundle has a reason code and no evidence at all. Code
that tried to build anything else would fail loudly instead of passing a half-bundle on.
"""

from __future__ import annotations

from datetime import date
from typing import Self

from pydantic import NonNegativeInt, field_validator, model_validator

from groundlock._frozen import cached_property
from groundlock.citations import BRACKET_C, GRAMMAR_NAMES, grammar_named
from groundlock.contracts._base import Contract
from groundlock.contracts._fields import Identifier, PageNumber, SourceReference
from groundlock.contracts.enums import AssemblyStatus, QueryType
from groundlock.contracts.evidence import (
    ENTRY_SEPARATOR,
    HEADER_TEXT_SEPARATOR,
    anchor_for,
)
from groundlock.contracts.reasons import DropReason, ReasonCode
from groundlock.contracts.retrieval import FiltersApplied, HistoryTurn
from groundlock.text.sanitize import safe_normalize_v2, sanitize_evidence

__all__ = [
    "AnswerBundle",
    "AssemblyMetrics",
    "AssemblyThresholds",
    "AssemblyTrace",
    "DroppedRow",
    "SelectedEvidence",
]


class SelectedEvidence(Contract):
    """One admitted chunk with its anchor; the unit of citation."""

    anchor: str
    """``C<n>``: the position of this entry in the evidence block."""
    chunk_id: Identifier
    knowledge_id: Identifier
    """The row's knowledge_id, or its chunk_id when the row had none."""
    rank: NonNegativeInt
    similarity_score: float
    """Kept for the audit trail; never rendered into the prompt or the public response."""
    sanitized_text: str
    """The text exactly as it appears in the prompt (sanitised, possibly trimmed)."""
    source_reference: SourceReference | None
    knowledge_type_effective: str | None
    equipment_id: str | None
    event_date: date | None
    faiss_id: int | None
    token_count: NonNegativeInt
    """Tokens this entry adds to the evidence block, header and separators included."""
    original_token_count: NonNegativeInt
    """Tokens the untrimmed text would have added; equals token_count unless truncated."""
    truncated: bool
    """Whether the text was cut to respect ``max_chunk_token_ratio``."""
    semantic_id: Identifier | None = None
    """The row's citation metadata, as the retriever gave it (see :class:`RetrievalRow`)."""
    citation_label: SourceReference | None = None
    document_id: Identifier | None = None
    source_file: SourceReference | None = None
    page: PageNumber | None = None
    rerank_score: float | None = None
    """The row's reranker score, if it gave one; kept for the confidence and the audit
    trail, never rendered into the prompt or the public response."""
    citation_grammar: str = "bracket_c"
    """The grammar the entry is written and cited in (the policy's, through its ruleset)."""

    @field_validator("sanitized_text")
    @classmethod
    def _is_sanitised(cls, value: str) -> str:
        # A bundle may also arrive from outside (a replay, a direct R3 call): its text must
        # be exactly what sanitising would leave, or it could carry structure into a prompt.
        if not value or sanitize_evidence(value).text != value:
            raise ValueError("sanitized_text must be non-empty safe_normalize_v1 output")
        return value

    @field_validator("citation_grammar")
    @classmethod
    def _known_grammar(cls, value: str) -> str:
        if value not in GRAMMAR_NAMES:
            raise ValueError(f"not a citation grammar; known: {', '.join(GRAMMAR_NAMES)}")
        return value

    @model_validator(mode="after")
    def _citable(self) -> Self:
        grammar = grammar_named(self.citation_grammar)
        if grammar is not BRACKET_C and (
            safe_normalize_v2(self.sanitized_text, grammar).text != self.sanitized_text
        ):
            raise ValueError("sanitized_text must be safe_normalize_v2 output for its grammar")
        problem = grammar.row_problem(self)
        if problem is not None:
            raise ValueError(problem)
        return self

    @cached_property
    def header(self) -> str:
        """The entry's header line (cached: R2 renders it, and its check renders it again)."""
        return grammar_named(self.citation_grammar).header(self)

    @cached_property
    def entry_text(self) -> str:
        """The exact bytes this entry contributes to ``evidence_block_text``."""
        return f"{self.header}{HEADER_TEXT_SEPARATOR}{self.sanitized_text}{ENTRY_SEPARATOR}"


class DroppedRow(Contract):
    """A row left out of the evidence, and the first rule that excluded it."""

    chunk_id: str
    rank: NonNegativeInt
    reason: DropReason


class AssemblyThresholds(Contract):
    """The policy values that decided this selection, copied for readers of the audit row."""

    min_top_similarity_score: float
    min_similarity_score: float
    overlap_ratio_threshold: float
    max_chunks: int
    max_chunks_per_knowledge_id: int
    max_evidence_tokens: int
    max_chunk_tokens: int


class AssemblyTrace(Contract):
    """Everything needed to reproduce or audit this assembly.

    Retrieval fields are None only when the request was too malformed to read them.
    """

    run_id: str | None
    index_version: str | None
    embedding_model: str | None
    retrieval_top_k: int | None
    retrieval_latency_ms: float | None
    filters_applied: FiltersApplied | None
    retrieval_strategy: str | None
    score_normalization: str | None
    access_denied_count: int | None
    policy_version: str
    policy_sha256: str
    token_encoding: str
    sanitization_mode: str
    ordering_mode: str
    thresholds: AssemblyThresholds


class AssemblyMetrics(Contract):
    """Counts that explain the selection: every retrieved row is either selected or dropped."""

    retrieved_k: NonNegativeInt
    selected_k: NonNegativeInt
    evidence_token_count: NonNegativeInt
    """Exact tokenizer count of ``evidence_block_text``."""
    drop_counts: dict[DropReason, NonNegativeInt]
    """Rows dropped per reason; every reason is present, zero or not, for a stable schema."""
    dropped_rows: tuple[DroppedRow, ...]
    truncation_applied: bool
    """Whether any selected chunk was trimmed (see ``SelectedEvidence.truncated``)."""
    hidden_characters_removed: NonNegativeInt
    """Hidden characters removed from the rows that selection examined."""
    shapes_neutralized: NonNegativeInt
    """Forged anchors, headers or fences neutralised in the rows that selection examined."""
    instruction_anchors: tuple[str, ...] = ()
    """Admitted entries that address the model (an injected instruction such as ``ignore all
    previous instructions``), as the policy's firewall ruleset recognises them. They stay
    evidence for what else they say; R5 rejects an answer that obeys them."""

    @property
    def dedup_dropped_count(self) -> int:
        """``001``'s name for ``drop_counts[DROP_DUP]``."""
        return self.drop_counts[DropReason.DROP_DUP]

    @property
    def budget_dropped_count(self) -> int:
        """``001``'s name for ``drop_counts[DROP_BUDGET]``."""
        return self.drop_counts[DropReason.DROP_BUDGET]

    @property
    def per_knowledge_cap_dropped_count(self) -> int:
        """``001``'s name for ``drop_counts[DROP_PER_KNOWLEDGE_CAP]``."""
        return self.drop_counts[DropReason.DROP_PER_KNOWLEDGE_CAP]

    def _check(self) -> None:
        if set(self.drop_counts) != set(DropReason):
            raise ValueError("drop_counts must hold every DropReason")
        if sum(self.drop_counts.values()) != len(self.dropped_rows):
            raise ValueError("drop_counts must count dropped_rows")
        if self.selected_k + len(self.dropped_rows) != self.retrieved_k:
            raise ValueError("every retrieved row must be selected or dropped")


class AnswerBundle(Contract):
    """R2's output: admitted evidence with anchors, or the reason there is none."""

    request_id: str | None
    """Null only when the input was too malformed to carry a usable request_id."""
    assembly_status: AssemblyStatus
    reason_code: ReasonCode | None
    """Why the status is not OK; None when it is."""
    message: str | None
    """Human-readable cause naming the offending field; never echoes evidence or scores."""
    user_question: str | None
    """The question as received, for R3; None only when the input was malformed."""
    query_type: QueryType | None = None
    """The bundle's query type, as received (None: the policy's default, ``factual``)."""
    history: tuple[HistoryTurn, ...] = ()
    """The bundle's prior turns, as received; R3 windows, sanitises and renders them."""
    selected_evidence: tuple[SelectedEvidence, ...]
    evidence_block_text: str
    """The exact evidence bytes for the prompt; empty unless OK."""
    trace: AssemblyTrace
    metrics: AssemblyMetrics | None
    """Selection metrics; None when the request failed before selection began."""

    @property
    def anchor_map(self) -> dict[str, str]:
        """Anchor to chunk_id, in anchor order: what R5 resolves citations against."""
        return {item.anchor: item.chunk_id for item in self.selected_evidence}

    @property
    def evidence_token_count(self) -> int:
        """Tokens of ``evidence_block_text`` (0 when there is no evidence)."""
        return self.metrics.evidence_token_count if self.metrics is not None else 0

    @property
    def allowed_anchors(self) -> tuple[str, ...]:
        """The anchors an answer may cite, in order."""
        return tuple(item.anchor for item in self.selected_evidence)

    def _check(self) -> None:
        if self.assembly_status is not AssemblyStatus.OK:
            if self.reason_code is None:
                raise ValueError("a non-OK AnswerBundle needs a reason_code")
            if self.selected_evidence or self.evidence_block_text:
                raise ValueError("a non-OK AnswerBundle must not carry evidence")
            if self.metrics is not None:
                _check_metrics_match(self.metrics, ())
            return
        if self.reason_code is not None:
            raise ValueError("an OK AnswerBundle has no reason_code")
        if not self.selected_evidence or self.metrics is None:
            raise ValueError("an OK AnswerBundle needs selected evidence and metrics")
        trace = self.trace
        if None in (trace.index_version, trace.embedding_model, trace.retrieval_top_k):
            raise ValueError("an OK AnswerBundle needs its retrieval trace fields")
        if self.request_id is None or self.user_question is None:
            raise ValueError("an OK AnswerBundle needs request_id and user_question")
        if self.allowed_anchors != tuple(anchor_for(i) for i in range(len(self.selected_evidence))):
            raise ValueError("anchors must be C0, C1, ... in evidence order")
        if len({item.chunk_id for item in self.selected_evidence}) != len(self.selected_evidence):
            raise ValueError("each anchor must map to a different chunk")
        if len({item.citation_grammar for item in self.selected_evidence}) != 1:
            raise ValueError("every entry must be written in one citation grammar")
        if self.evidence_block_text != "".join(e.entry_text for e in self.selected_evidence):
            raise ValueError("evidence_block_text must be exactly the rendered entries")
        _check_metrics_match(self.metrics, self.selected_evidence)


def _check_metrics_match(metrics: AssemblyMetrics, selected: tuple[SelectedEvidence, ...]) -> None:
    """The metrics that restate the evidence must restate it correctly."""
    if metrics.selected_k != len(selected):
        raise ValueError("metrics.selected_k must equal the number of selected chunks")
    if metrics.evidence_token_count != sum(item.token_count for item in selected):
        raise ValueError("metrics.evidence_token_count must be the sum of the entries' tokens")
    if metrics.truncation_applied != any(item.truncated for item in selected):
        raise ValueError("metrics.truncation_applied must say whether any entry was trimmed")
