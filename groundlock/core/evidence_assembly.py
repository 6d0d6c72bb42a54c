"""R2 as a pure function: ``assemble(payload, policy) -> AnswerBundle``.

The order of operations is the contract:

1. Read the payload (limits, V1-V4; see :mod:`groundlock.core.intake`).
2. Propagate the retriever's own FAILED / NO_EVIDENCE verdicts.
3. V5: every declared knowledge type must be allowed by the policy.
4. Order rows ``rank_strict`` (rank, then chunk_id).
5. Top-similarity gate: if the best row is below it, nothing is trusted (NO_EVIDENCE).
6. Walk the rows in order, admitting each unless, first rule first: a filter excludes it,
   it is below the similarity floor, its knowledge_id is at its cap, it is empty after
   sanitising, or an admitted chunk already covers most of it (more than
   ``overlap_ratio_threshold`` of its shingles are in the text shown for that admitted
   chunk, so trimmed-away text never counts as shown). An admitted chunk longer than
   ``max_chunk_token_ratio`` of the budget is trimmed; if it does not fit in what is left of
   the evidence budget, the walk stops there (lower ranks are pruned first). The walk also
   stops at ``max_chunks``. Rows after a stop are counted under the stopping rule.

Each row is sanitised, shingled and tokenised only if the walk reaches it, and those results
are cached per text, so the cost is linear in the rows examined and near zero when warm.
Dedup compares a candidate with the at most ``max_chunks`` admitted chunks, never all pairs.
Rows after a stop are never visited one by one: they are recorded as dropped in one pass
(their chunk_id, rank and the stopping rule), so a request of 1,000 rows costs, beyond
validating its input, one small record per row it cannot admit. The whole-bundle passes
(ordering, the top-similarity gate, the domain check) run in C (``operator`` getters) and
fall back to the row-by-row loop only to name a failing row.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import TypedDict

from groundlock._caches import WeightedLRU
from groundlock.citations import grammar_named
from groundlock.contracts.assembly import (
    AnswerBundle,
    AssemblyMetrics,
    AssemblyThresholds,
    AssemblyTrace,
    DroppedRow,
    SelectedEvidence,
)
from groundlock.contracts.enums import AssemblyStatus, RetrievalStatus
from groundlock.contracts.evidence import (
    ENTRY_SEPARATOR,
    HEADER_TEXT_SEPARATOR,
    anchor_for,
)
from groundlock.contracts.reasons import DropReason, ReasonCode
from groundlock.contracts.retrieval import FiltersApplied, RetrievalBundle, RetrievalRow
from groundlock.core.firewall.injection import addresses_the_model
from groundlock.core.intake import Rejection, read_bundle, salvage_identity
from groundlock.policies.model import Policy
from groundlock.text.overlap import covered_fraction, shingle_set, shingles
from groundlock.text.sanitize import SanitizedText, neutralized_for, safe_normalize
from groundlock.text.tokens import TokenCounter

__all__ = ["assemble", "assemble_read", "failed_bundle", "without_lowest_ranked"]


def assemble(payload: object, policy: Policy, counter: TokenCounter | None = None) -> AnswerBundle:
    """Select, order, sanitise and render the evidence a model may see for one request.

    Never raises for bad input: anything that is not a valid bundle comes back FAILED with a
    reason code and a message naming the field.

    >>> from groundlock.policies import load_policy
    >>> row = {"chunk_id": "c1", "rank": 0, "similarity": 0.91, "faiss_id": 7,
    ...        "chunk_text": "Replace the seal every 500 hours.",
    ...        "knowledge_type_effective": "MAINTENANCE_PROCEDURE"}
    >>> bundle = {"request_id": "r1", "user_question": "When is the seal replaced?",
    ...           "retrieval_status": "SUCCESS", "index_version": "idx-1",
    ...           "embedding_model": "emb-1", "top_k": 5, "results": [row]}
    >>> print(assemble(bundle, load_policy()).evidence_block_text, end="")
    [C0 | chunk_id=c1 | knowledge_id=c1 | source=unknown]
    Replace the seal every 500 hours.
    <BLANKLINE>
    """
    return assemble_read(read_bundle(payload, policy.input_limits), policy, counter)


def assemble_read(
    read: RetrievalBundle | Rejection, policy: Policy, counter: TokenCounter | None = None
) -> AnswerBundle:
    """:func:`assemble` of what :func:`~groundlock.core.intake.read_bundle` made of a payload.

    For a caller that keeps the read bundle (R2's stage keeps it for the evidence archive):
    the input limits are not checked a second time.
    """
    counter = counter if counter is not None else policy.token_counter
    if isinstance(read, Rejection):
        return _refused(
            AssemblyStatus.FAILED, read.reason, read.message, policy,
            request_id=read.request_id, run_id=read.run_id,
        )  # fmt: skip
    return _assemble_valid(read, policy, counter)


def failed_bundle(
    payload: object, policy: Policy, reason: ReasonCode, message: str
) -> AnswerBundle:
    """A FAILED bundle for ``payload``, keeping whatever identity it carries.

    Used by the runnable to fail closed when a bug escapes :func:`assemble`.
    """
    request_id, run_id = salvage_identity(payload)
    return _refused(
        AssemblyStatus.FAILED, reason, message, policy, request_id=request_id, run_id=run_id
    )


def without_lowest_ranked(bundle: AnswerBundle, reason: DropReason) -> AnswerBundle:
    """``bundle`` minus its lowest-ranked (last) entry, counted as dropped for ``reason``.

    The remaining entries keep their anchors (C0..Cn-2) and the block stays a byte prefix
    of the old one, so nothing already rendered changes meaning. Used by R3's PB4 loop.
    """
    if bundle.metrics is None or len(bundle.selected_evidence) < 2:
        raise ValueError("only an OK bundle with at least two entries can lose one")
    *kept, last = bundle.selected_evidence
    metrics = bundle.metrics
    dropped = (
        *metrics.dropped_rows,
        DroppedRow(chunk_id=last.chunk_id, rank=last.rank, reason=reason),
    )
    return _admitted(
        bundle,
        tuple(kept),
        bundle.trace,
        _metrics(
            metrics.retrieved_k,
            tuple(kept),
            dropped,
            metrics.hidden_characters_removed,
            metrics.shapes_neutralized,
        ),
    )


def _assemble_valid(bundle: RetrievalBundle, policy: Policy, counter: TokenCounter) -> AnswerBundle:
    if bundle.retrieval_status is RetrievalStatus.FAILED:
        return _refused(
            AssemblyStatus.FAILED, ReasonCode.RETRIEVAL_FAILED,
            "retrieval_status: the retriever reported FAILED", policy, bundle=bundle,
        )  # fmt: skip
    if bundle.retrieval_status is RetrievalStatus.NO_EVIDENCE:
        return _refused(
            AssemblyStatus.NO_EVIDENCE, ReasonCode.RETRIEVAL_NO_EVIDENCE,
            "retrieval_status: the retriever found no evidence", policy, bundle=bundle,
            metrics=_metrics(0, (), ()),
        )  # fmt: skip
    row_problem = (
        _request_problem(bundle, policy)
        or _citation_problem(bundle, policy)
        or _domain_problem(bundle, policy)
    )
    if row_problem:
        return _refused(
            AssemblyStatus.FAILED, row_problem[0], row_problem[1], policy, bundle=bundle,
        )  # fmt: skip

    # ``sorted`` is stable and V2 makes ranks unique, so this is rank_strict; the getters
    # keep the per-row work in C (a 1,000-row request is sorted in tens of microseconds).
    rows = sorted(bundle.results, key=_RANK_STRICT)
    top_similarity = max(map(_SIMILARITY, rows))
    if top_similarity < policy.min_top_similarity_score:
        gate = DropReason.DROP_TOP_SIMILARITY_GATE
        return _refused(
            AssemblyStatus.NO_EVIDENCE, ReasonCode.TOP_SIMILARITY_BELOW_GATE,
            "results: no row reaches min_top_similarity_score", policy, bundle=bundle,
            metrics=_metrics(len(rows), (), _all_dropped(rows, gate), counts={gate: len(rows)}),
        )  # fmt: skip

    walk = _Walk(policy, counter, bundle.filters_applied)
    walk.walk(rows)
    metrics = _metrics(
        len(rows),
        walk.selected,
        walk.dropped,
        walk.hidden_removed,
        walk.neutralized,
        instructions=_addressing_the_model(walk.selected, policy),
        counts=walk.counts,
    )
    if not walk.selected:
        return _refused(
            AssemblyStatus.NO_EVIDENCE, ReasonCode.ALL_EVIDENCE_DROPPED,
            "results: every row was dropped (see metrics.drop_counts)", policy, bundle=bundle,
            metrics=metrics,
        )  # fmt: skip
    return _admitted(bundle, walk.selected, _trace(policy, bundle), metrics)


def _request_problem(bundle: RetrievalBundle, policy: Policy) -> tuple[ReasonCode, str] | None:
    """A query type or history the policy does not take (never silently ignored)."""
    try:
        policy.budget_for(bundle.query_type)
    except KeyError:
        known = ", ".join(policy.query_types or ("factual",))
        return (
            ReasonCode.INPUT_SCHEMA_INVALID,
            f"query_type: policy {policy.policy_version} defines no query type "
            f"{bundle.query_type!s} (it knows {known})",
        )
    if bundle.history and policy.history is None:
        return (
            ReasonCode.INPUT_SCHEMA_INVALID,
            f"history: policy {policy.policy_version} takes no conversation history",
        )
    return None


def _citation_problem(bundle: RetrievalBundle, policy: Policy) -> tuple[ReasonCode, str] | None:
    """A row the policy's grammar cannot cite (a preset's marker needs a field it lacks)."""
    grammar = policy.grammar
    if not grammar.required_fields and grammar.name == "bracket_c":
        return None
    seen: dict[str, int] = {}
    for index, row in enumerate(bundle.results):
        problem = grammar.row_problem(row)
        key = grammar.unique_key(row)
        if problem is None and key is not None:
            if key in seen:
                field = "semantic_id" if row.semantic_id is not None else "chunk_id"
                problem = (
                    f"{field}: {key!r} already cites results[{seen[key]}]; a {grammar.shape} "
                    "marker must name one row"
                )
            seen.setdefault(key, index)
        if problem is not None:
            return (
                ReasonCode.INPUT_SCHEMA_INVALID,
                f"results[{index}].{problem} under policy {policy.policy_version}",
            )
    return None


_RANK_STRICT = attrgetter("rank", "chunk_id")
_SIMILARITY = attrgetter("similarity_score")
_KNOWLEDGE_TYPE = attrgetter("knowledge_type_effective")


def _domain_problem(bundle: RetrievalBundle, policy: Policy) -> tuple[ReasonCode, str] | None:
    allowed = policy.allowed_knowledge_types
    # The bundle's distinct knowledge types, gathered in C: when they all pass, no row needs
    # looking at; otherwise the loop below finds the first failing row, to name it.
    kinds = set(map(_KNOWLEDGE_TYPE, bundle.results))
    if None in kinds and not policy.require_knowledge_type:
        kinds.discard(None)
    if None not in kinds and all(kind in allowed for kind in kinds):
        return None
    for index, row in enumerate(bundle.results):
        kind = row.knowledge_type_effective
        if kind is None and policy.require_knowledge_type:
            return (
                ReasonCode.DOMAIN_INTEGRITY,
                f"results[{index}].knowledge_type_effective: required by policy "
                f"{policy.policy_version}",
            )
        if kind is not None and kind not in allowed:
            return (
                ReasonCode.DOMAIN_INTEGRITY,
                f"results[{index}].knowledge_type_effective: not in the allowed_knowledge_types "
                f"of policy {policy.policy_version}",
            )
    return None


def _filter_reason(row: RetrievalRow, filters: FiltersApplied | None) -> DropReason | None:
    if filters is None:
        return None
    if filters.equipment_id is not None and row.equipment_id != filters.equipment_id:
        return DropReason.DROP_EQUIPMENT_FILTER
    if filters.knowledge_type is not None and (
        row.knowledge_type_effective not in filters.knowledge_type
    ):
        return DropReason.DROP_KNOWLEDGE_TYPE_FILTER
    if not filters.admits_date(row.event_date):
        return DropReason.DROP_DATE_FILTER
    return None


@dataclass(slots=True)
class _EntryFacts:
    """What the walk needs of one raw chunk text, whatever row it arrives in."""

    clean: SanitizedText
    shingles: frozenset[str]
    body_tokens: int | None = None
    """Tokens of the sanitised text with its entry separator: counted the first time the
    text is admitted, never for a row dropped before (a duplicate is not tokenised)."""


def _entry_facts(key: tuple[str, int, str, str]) -> _EntryFacts:
    raw, size, _encoding, grammar = key
    # Computed here, not through the sanitise and shingle caches: held once, not twice.
    clean = safe_normalize(raw)
    if grammar:  # safe_normalize_v2, with the grammar's marker shapes
        clean = neutralized_for(clean, grammar_named(grammar))
    return _EntryFacts(clean, shingle_set(clean.text, size) if clean.text else frozenset())


def _facts_weight(key: tuple[str, int, str, str], facts: _EntryFacts) -> int:
    # Bytes, roughly: key and sanitised text at up to 4 bytes a character (CPython stores
    # a string at 1, 2 or 4), about 150 per shingle, and the objects around them.
    width = 1 if key[0].isascii() else 4
    return width * (len(key[0]) + len(facts.clean.text)) + 150 * len(facts.shingles) + 500


ENTRY_FACTS: WeightedLRU[tuple[str, int, str, str], _EntryFacts] = WeightedLRU(
    _entry_facts, weigh=_facts_weight, max_weight=32 * 2**20
)
"""Sanitised text, shingles and body tokens per (chunk text, shingle size, encoding name,
grammar whose markers v2 neutralises or ""):
one lookup per row instead of three. Bounded at about 32 MB."""


@dataclass(slots=True)
class _Admitted:
    evidence: SelectedEvidence
    shingles: frozenset[str]


@dataclass(frozen=True, slots=True)
class _RowEntry:
    """A row about to be admitted at ``anchor``, as its grammar writes its header."""

    anchor: str
    row: RetrievalRow

    @property
    def chunk_id(self) -> str:
        return self.row.chunk_id

    @property
    def knowledge_id(self) -> str:
        return self.row.knowledge_key

    @property
    def source_reference(self) -> str | None:
        return self.row.source_reference

    @property
    def semantic_id(self) -> str | None:
        return self.row.semantic_id

    @property
    def citation_label(self) -> str | None:
        return self.row.citation_label

    @property
    def document_id(self) -> str | None:
        return self.row.document_id

    @property
    def source_file(self) -> str | None:
        return self.row.source_file

    @property
    def page(self) -> int | None:
        return self.row.page


class _Walk:
    """The rank-order walk of step 6; holds the running selection and budget."""

    def __init__(
        self, policy: Policy, counter: TokenCounter, filters: FiltersApplied | None
    ) -> None:
        self.policy = policy
        self.counter = counter
        self.filters = filters
        self.grammar = policy.grammar
        self.neutralizes = (
            self.grammar.name if policy.sanitization_mode != "safe_normalize_v1" else ""
        )
        self.admitted: list[_Admitted] = []
        self.admitted_shingles: set[str] = set()
        """The union of the admitted entries' shingles: a candidate covered by less than
        the threshold of the union is covered by less of each entry, so the per-entry
        comparison (one set intersection per admitted entry) only runs when it could fail."""
        self.dropped: list[_Dropped] = []
        self.counts: Counter[DropReason] = Counter()
        """``dropped`` counted per reason, kept as the walk goes (the rows after a stop are
        counted in one addition)."""
        self.per_knowledge: Counter[str] = Counter()
        self.tokens_used = 0
        self.stopped_by: DropReason | None = None
        self.hidden_removed = 0
        self.neutralized = 0

    @property
    def selected(self) -> tuple[SelectedEvidence, ...]:
        return tuple(item.evidence for item in self.admitted)

    def walk(self, rows: Sequence[RetrievalRow]) -> None:
        """Visit ``rows`` in order until a stop; record every row after it, unvisited.

        A row after the stop is dropped under the stopping rule whatever it holds, so it is
        never filtered, sanitised, shingled or tokenised: it costs one small record.
        """
        max_chunks = self.policy.max_chunks
        for index, row in enumerate(rows):
            if len(self.admitted) >= max_chunks:
                self.stopped_by = DropReason.DROP_MAX_CHUNKS
                self._drop_all(rows[index:], self.stopped_by)
                return
            reason = self._admit(row)
            if reason is not None:
                self.dropped.append(_dropped(row, reason))
                self.counts[reason] += 1
                if self.stopped_by is not None:  # this row stopped the walk (DROP_BUDGET)
                    self._drop_all(rows[index + 1 :], self.stopped_by)
                    return

    def visit(self, row: RetrievalRow) -> None:
        """One step of :meth:`walk`, for a caller that walks row by row (same result)."""
        if self.stopped_by is None and len(self.admitted) >= self.policy.max_chunks:
            self.stopped_by = DropReason.DROP_MAX_CHUNKS
        reason = self.stopped_by or self._admit(row)
        if reason is not None:
            self.dropped.append(_dropped(row, reason))
            self.counts[reason] += 1

    def _drop_all(self, rows: Sequence[RetrievalRow], reason: DropReason) -> None:
        if rows:
            self.dropped += _all_dropped(rows, reason)
            self.counts[reason] += len(rows)

    def _admit(self, row: RetrievalRow) -> DropReason | None:  # noqa: PLR0911  (one return per rule, in contract order)
        policy = self.policy
        reason = _filter_reason(row, self.filters)
        if reason is not None:
            return reason
        if row.similarity_score < policy.min_similarity_score:
            return DropReason.DROP_BELOW_SIMILARITY_FLOOR
        if self.per_knowledge[row.knowledge_key] >= policy.max_chunks_per_knowledge_id:
            return DropReason.DROP_PER_KNOWLEDGE_CAP
        size, threshold = policy.overlap_shingle_words, policy.overlap_ratio_threshold
        # V4 already refused a null or empty chunk_text.
        facts = ENTRY_FACTS(
            (row.chunk_text or "", size, self.counter.encoding.name, self.neutralizes)
        )
        clean = facts.clean
        self.hidden_removed += clean.removed_characters
        self.neutralized += clean.neutralized_shapes
        if not clean.text:
            return DropReason.DROP_EMPTY_AFTER_SANITIZE
        row_shingles = facts.shingles
        if covered_fraction(row_shingles, self.admitted_shingles) > threshold and any(
            covered_fraction(row_shingles, a.shingles) > threshold for a in self.admitted
        ):
            return DropReason.DROP_DUP

        anchor = anchor_for(len(self.admitted))
        header = self.grammar.header(_RowEntry(anchor, row))
        header_tokens = self.counter.count(header + HEADER_TEXT_SEPARATOR)
        if facts.body_tokens is None:  # two threads may both count: same value
            facts.body_tokens = self.counter.count(clean.text + ENTRY_SEPARATOR)
        full_body_tokens = facts.body_tokens
        body_budget = policy.max_chunk_tokens - header_tokens
        text, body_tokens = clean.text, full_body_tokens
        truncated = body_tokens > body_budget
        if truncated:
            text, body_tokens = _trim(clean.text, body_budget, self.counter)
            if not text:
                return DropReason.DROP_BUDGET
        entry_tokens = header_tokens + body_tokens
        if self.tokens_used + entry_tokens > policy.max_evidence_tokens:
            self.stopped_by = DropReason.DROP_BUDGET
            return self.stopped_by

        self.tokens_used += entry_tokens
        self.per_knowledge[row.knowledge_key] += 1
        evidence = SelectedEvidence(
            anchor=anchor,
            chunk_id=row.chunk_id,
            knowledge_id=row.knowledge_key,
            rank=row.rank,
            similarity_score=row.similarity_score,
            sanitized_text=text,
            source_reference=row.source_reference,
            knowledge_type_effective=row.knowledge_type_effective,
            equipment_id=row.equipment_id,
            event_date=row.event_date,
            faiss_id=row.faiss_id,
            token_count=entry_tokens,
            original_token_count=header_tokens + full_body_tokens,
            truncated=truncated,
            semantic_id=row.semantic_id,
            citation_label=row.citation_label,
            document_id=row.document_id,
            source_file=row.source_file,
            page=row.page,
            rerank_score=row.rerank_score,
            citation_grammar=self.grammar.name,
        )
        shown = shingles(text, size) if truncated else row_shingles
        self.admitted.append(_Admitted(evidence, shown))
        self.admitted_shingles |= shown
        return None


_SENTENCE_ENDS = (". ", "? ", "! ")


def _trim(text: str, body_budget: int, counter: TokenCounter) -> tuple[str, int]:
    """Cut ``text`` so that it plus its entry separator fits ``body_budget`` tokens.

    Deterministic: take the first tokens that fit, then back off to the last sentence end
    (or failing that the last space) in the second half of the cut, so the model is not
    handed half a word. Returns the cut text and its counted tokens, ``("", 0)`` if nothing fits.
    """
    token_ids = counter.encode(text)  # once: each attempt below only decodes a prefix
    keep = body_budget - counter.count(ENTRY_SEPARATOR)
    while keep > 0:
        cut = _nice_cut(counter.decode_prefix(token_ids, keep))
        tokens = counter.count(cut + ENTRY_SEPARATOR) if cut else 0
        if cut and tokens <= body_budget:
            return cut, tokens
        keep -= max(1, tokens - body_budget)
    return "", 0


def _nice_cut(head: str) -> str:
    half = len(head) // 2
    sentence_end = max(head.rfind(mark) for mark in _SENTENCE_ENDS)
    if sentence_end >= half:
        return head[: sentence_end + 1]
    space = head.rfind(" ")
    if space >= half:
        return head[:space]
    return head.rstrip()


class _Dropped(TypedDict):
    """A DroppedRow still as data.

    AssemblyMetrics validates all of them in one call, about half the cost of building each
    one (a 20-row request drops a dozen).
    """

    chunk_id: str
    rank: int
    reason: DropReason


def _dropped(row: RetrievalRow, reason: DropReason) -> _Dropped:
    return {"chunk_id": row.chunk_id, "rank": row.rank, "reason": reason}


def _all_dropped(rows: Sequence[RetrievalRow], reason: DropReason) -> list[_Dropped]:
    """``_dropped`` of each row, all for one reason: one comprehension, no call per row."""
    return [{"chunk_id": row.chunk_id, "rank": row.rank, "reason": reason} for row in rows]


_DROP_REASONS = tuple(DropReason)


def _metrics(
    retrieved: int,
    selected: tuple[SelectedEvidence, ...],
    dropped: Sequence[DroppedRow | _Dropped],
    hidden_removed: int = 0,
    neutralized: int = 0,
    *,
    instructions: tuple[str, ...] = (),
    counts: Counter[DropReason] | dict[DropReason, int] | None = None,
) -> AssemblyMetrics:
    """The metrics of a selection.

    ``counts`` is ``dropped`` per reason when the caller kept it as it went (the walk does),
    else it is counted here; AssemblyMetrics checks that it adds up to ``dropped``.
    """
    if counts is None:
        counts = Counter(row["reason"] if isinstance(row, dict) else row.reason for row in dropped)
    return AssemblyMetrics.model_validate(
        {
            "retrieved_k": retrieved,
            "selected_k": len(selected),
            "evidence_token_count": sum(item.token_count for item in selected),
            "drop_counts": {reason: counts.get(reason, 0) for reason in _DROP_REASONS},
            "dropped_rows": tuple(dropped),
            "truncation_applied": any(item.truncated for item in selected),
            "hidden_characters_removed": hidden_removed,
            "shapes_neutralized": neutralized,
            "instruction_anchors": instructions,
        }
    )


def _addressing_the_model(selected: Sequence[SelectedEvidence], policy: Policy) -> tuple[str, ...]:
    """The anchors of admitted entries that address the model (injected instructions).

    As the policy's firewall ruleset recognises them: recorded here, judged by R5.
    """
    ruleset = policy.ruleset
    return tuple(e.anchor for e in selected if addresses_the_model(e.sanitized_text, ruleset))


def _trace(
    policy: Policy, bundle: RetrievalBundle | None, run_id: str | None = None
) -> AssemblyTrace:
    return AssemblyTrace(
        run_id=bundle.run_id if bundle else run_id,
        index_version=bundle.index_version if bundle else None,
        embedding_model=bundle.embedding_model if bundle else None,
        retrieval_top_k=bundle.top_k if bundle else None,
        retrieval_latency_ms=bundle.retrieval_latency_ms if bundle else None,
        filters_applied=bundle.filters_applied if bundle else None,
        retrieval_strategy=bundle.retrieval_strategy if bundle else None,
        score_normalization=bundle.score_normalization if bundle else None,
        access_denied_count=bundle.access_denied_count if bundle else None,
        policy_version=policy.policy_version,
        policy_sha256=policy.policy_sha256,
        token_encoding=policy.token_encoding,
        sanitization_mode=policy.sanitization_mode,
        ordering_mode=policy.ordering_mode,
        thresholds=_thresholds(policy),
    )


_THRESHOLDS: dict[str, AssemblyThresholds] = {}
"""Per policy hash: the same thresholds for every request a policy decides."""


def _thresholds(policy: Policy) -> AssemblyThresholds:
    found = _THRESHOLDS.get(policy.policy_sha256)
    if found is None:
        if len(_THRESHOLDS) >= 64:  # policies built per tenant or per request: stay bounded
            _THRESHOLDS.clear()
        found = _THRESHOLDS[policy.policy_sha256] = AssemblyThresholds(
            min_top_similarity_score=policy.min_top_similarity_score,
            min_similarity_score=policy.min_similarity_score,
            overlap_ratio_threshold=policy.overlap_ratio_threshold,
            max_chunks=policy.max_chunks,
            max_chunks_per_knowledge_id=policy.max_chunks_per_knowledge_id,
            max_evidence_tokens=policy.max_evidence_tokens,
            max_chunk_tokens=policy.max_chunk_tokens,
        )
    return found


def _admitted(
    request: RetrievalBundle | AnswerBundle,
    selected: tuple[SelectedEvidence, ...],
    trace: AssemblyTrace,
    metrics: AssemblyMetrics,
) -> AnswerBundle:
    return AnswerBundle(
        request_id=request.request_id,
        assembly_status=AssemblyStatus.OK,
        reason_code=None,
        message=None,
        user_question=request.user_question,
        query_type=request.query_type,
        history=request.history,
        selected_evidence=selected,
        evidence_block_text="".join(item.entry_text for item in selected),
        trace=trace,
        metrics=metrics,
    )


def _refused(
    status: AssemblyStatus,
    reason: ReasonCode,
    message: str,
    policy: Policy,
    *,
    bundle: RetrievalBundle | None = None,
    request_id: str | None = None,
    run_id: str | None = None,
    metrics: AssemblyMetrics | None = None,
) -> AnswerBundle:
    return AnswerBundle(
        request_id=bundle.request_id if bundle else request_id,
        assembly_status=status,
        reason_code=reason,
        message=message,
        user_question=bundle.user_question if bundle else None,
        query_type=bundle.query_type if bundle else None,
        history=bundle.history if bundle else (),
        selected_evidence=(),
        evidence_block_text="",
        trace=_trace(policy, bundle, run_id),
        metrics=metrics,
    )
