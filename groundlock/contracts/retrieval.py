"""The R2 input contract: a retrieval bundle and its ranked rows.

Two specs describe the row with different names. ``000`` rows carry ``similarity``,
``faiss_id``, ``knowledge_type_effective``, ``equipment_id`` and ``event_date``; ``001`` rows
carry ``knowledge_id``, ``similarity_score`` and ``source_reference``. A row may use either
shape or both: ``similarity`` is accepted as an alias of ``similarity_score`` (giving both
with different values is an error), and a row without ``knowledge_id`` uses its ``chunk_id``
in its place so that per-knowledge caps and citations still work.

Everything the bundle can check about itself is checked here (V1-V4 of ``000``), so a
``RetrievalBundle`` instance is valid by construction. Checks that depend on a policy (V5,
input limits) belong to assembly.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date
from operator import attrgetter
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, Field, StrictInt, StrictStr, field_validator, model_validator
from pydantic_core import PydanticCustomError
from typing_extensions import override

from groundlock.contracts._base import Contract
from groundlock.contracts._fields import (
    ChunkText,
    Count,
    Identifier,
    IsoDate,
    NonNegativeFinite,
    PageNumber,
    RerankScore,
    Similarity,
    SourceReference,
)
from groundlock.contracts.enums import QueryType, RetrievalStatus

__all__ = ["MAX_HISTORY_TURNS", "FiltersApplied", "HistoryTurn", "RetrievalBundle", "RetrievalRow"]

_SURROGATE_RE = re.compile("[\ud800-\udfff]")


class RetrievalRow(Contract):
    """One ranked evidence candidate as the retriever returned it."""

    chunk_id: Identifier
    """Stable id of the chunk; anchors map to it one to one."""
    rank: StrictInt
    """Retriever rank; a bundle's ranks are exactly 0..n-1 (RANK_INTEGRITY otherwise, however
    large: unbounded here, never stored as given). Orders evidence and anchors."""
    similarity_score: Annotated[
        Similarity, Field(validation_alias=AliasChoices("similarity_score", "similarity"))
    ]
    """Retrieval score in [0, 1] (``similarity`` in ``000``). Gated, never shown to clients."""
    chunk_text: ChunkText
    """Raw chunk text. Null or empty fails V4; R2 sanitises it before it reaches a prompt."""
    knowledge_id: Identifier | None = None
    """Source document id; caps and public citations group by it. Defaults to ``chunk_id``."""
    knowledge_type_effective: Identifier | None = None
    """Document type checked against the policy's ``allowed_knowledge_types`` (V5)."""
    source_reference: SourceReference | None = None
    """Human-readable source shown in the evidence header and in public citations."""
    faiss_id: Count | None = None
    """Vector-index row id, kept for the audit trail only."""
    equipment_id: Identifier | None = None
    """Equipment the chunk is about; a row without one never passes an equipment filter."""
    event_date: IsoDate | None = None
    """Date of the recorded event; a row without one never passes a date filter."""
    semantic_id: Identifier | None = None
    """A stable id a reader recognises (``IPC_420_0``, 002's citation marker)."""
    citation_label: SourceReference | None = None
    """How the source is named in a citation (003's ``citation_label``)."""
    document_id: Identifier | None = None
    """The document the chunk belongs to (003)."""
    source_file: SourceReference | None = None
    """The file the chunk was read from (004's ``[Source: file, p.N]``)."""
    page: PageNumber | None = None
    """The page the chunk is on, counted from 1."""
    rerank_score: RerankScore | None = None
    """A reranker's score for the row (004's cross-encoder ``rerank_score``), when one ran.
    Never gated on and never shown to clients: only a policy whose confidence ``basis`` is
    ``rerank_else_similarity`` reads it, for the response's confidence."""

    @model_validator(mode="before")
    @classmethod
    def _alias_agrees(cls, data: object) -> object:
        # ``similarity`` is an alias (AliasChoices maps it without copying the row); giving
        # both names is allowed only when they agree. Runs once per row of every bundle: a
        # JSON row (a dict) holding at most one of the names returns at once, before the
        # Mapping check (an ABC isinstance, the slowest step here).
        if type(data) is dict and ("similarity" not in data or "similarity_score" not in data):
            return data
        if not isinstance(data, Mapping) or "similarity" not in data:
            return data
        if "similarity_score" not in data:
            return data if isinstance(data, dict) else dict(data)
        if data["similarity_score"] != data["similarity"]:
            raise PydanticCustomError(
                "similarity_integrity",
                "similarity and similarity_score are both given and differ",
            )
        return {key: value for key, value in data.items() if key != "similarity"}

    @override
    def model_post_init(self, context: Any = None, /) -> None:
        # The row's ``_check``, as the post-init hook itself: Contract's hook would call
        # ``_check`` from its own, two Python calls per row of every bundle instead of one.
        # A subclass gets Contract's hook, which calls ``_check``: this same function.
        if self.knowledge_id is None and (
            self.faiss_id is None or self.knowledge_type_effective is None
        ):
            raise PydanticCustomError(
                "row_shape",
                "a row needs knowledge_id (spec 001 shape) or both faiss_id and "
                "knowledge_type_effective (spec 000 shape)",
            )

    _check = model_post_init

    @property
    def knowledge_key(self) -> str:
        """The knowledge id used for caps and citations: ``knowledge_id`` or the chunk id."""
        return self.knowledge_id if self.knowledge_id is not None else self.chunk_id


class FiltersApplied(Contract):
    """Filters the retriever applied; R2 re-checks every row against them.

    A filter that groundlock does not know cannot be enforced, so unknown keys are rejected
    rather than ignored.
    """

    equipment_id: Identifier | None = None
    """Only rows about this equipment may pass; rows with a null equipment_id are dropped."""
    knowledge_type: tuple[Identifier, ...] | None = None
    """Only rows of these knowledge types may pass (a single string is accepted)."""
    date_from: IsoDate | None = None
    """Inclusive lower bound on ``event_date``."""
    date_to: IsoDate | None = None
    """Inclusive upper bound on ``event_date``."""

    @field_validator("knowledge_type", mode="before")
    @classmethod
    def _one_type_is_a_list(cls, value: object) -> object:
        return (value,) if isinstance(value, str) else value

    def _check(self) -> None:
        if self.date_from and self.date_to and self.date_from > self.date_to:
            raise PydanticCustomError("value_error", "date_from must not be after date_to")

    def admits_date(self, event_date: date | None) -> bool:
        """Whether a row's event date passes the date range (True when no range is set)."""
        if self.date_from is None and self.date_to is None:
            return True
        if event_date is None:
            return False
        return (self.date_from is None or event_date >= self.date_from) and (
            self.date_to is None or event_date <= self.date_to
        )


class HistoryTurn(Contract):
    """One prior turn of the conversation (``004``): shown to the model, never evidence.

    History is untrusted like evidence (sanitised, fenced in its own section) and can never
    be cited: a sentence it alone supports is uncited.
    """

    role: Literal["user", "assistant"]
    content: Annotated[StrictStr, Field(min_length=1, max_length=20_000)]
    """The turn's text; R3 normalises it like evidence."""

    @field_validator("content")
    @classmethod
    def _valid_text(cls, value: str) -> str:
        if _SURROGATE_RE.search(value):
            raise PydanticCustomError("value_error", "content must be valid Unicode text")
        return value


MAX_HISTORY_TURNS = 200
"""Most turns a bundle may carry; the policy's window keeps far fewer."""


class RetrievalBundle(Contract):
    """What retrieval hands to R2: a question, run metadata and the ranked rows."""

    request_id: Identifier
    """Caller's id for this request; every trace and audit row carries it."""
    user_question: StrictStr
    """The question as the user asked it; R3 inserts it with whitespace normalisation only."""
    retrieval_status: RetrievalStatus
    """The retriever's own verdict. FAILED propagates; NO_EVIDENCE must come with no rows."""
    index_version: Identifier
    """Version of the vector index the rows came from (reproducibility)."""
    embedding_model: Identifier
    """Embedding model that produced the similarities (reproducibility)."""
    top_k: Annotated[Count, Field(ge=1)]
    """How many rows the retriever was asked for; a bundle never holds more."""
    results: tuple[RetrievalRow, ...]
    """The ranked rows, in any order: R2 orders them by rank, then chunk_id."""
    run_id: Identifier | None = None
    """Id of this execution of the request; with request_id, the audit key."""
    retrieval_latency_ms: NonNegativeFinite | None = None
    """Retriever latency, propagated to the trace."""
    filters_applied: FiltersApplied | None = None
    """Filters the retriever applied; R2 drops rows that do not satisfy them."""
    retrieval_strategy: Identifier | None = None
    """How the rows were found (``vector_store:InMemoryVectorStore``); for the query log."""
    score_normalization: Identifier | None = None
    """How the store's raw scores became ``similarity_score`` in [0, 1] (``cosine``).

    A gate threshold means something only for the scale it was calibrated on, so the audit
    trail records the mapping that produced every similarity it judged.
    """
    access_denied_count: Count | None = None
    """Rows the retriever found that the requesting principal may not see, withheld before
    this bundle was built. Recorded for audit; never shown to the model or the client."""
    query_type: QueryType | None = None
    """``factual``, ``summary`` or ``compare`` (``004``): selects the policy's output budget
    and word limit. None is the policy's default, ``factual``."""
    history: Annotated[tuple[HistoryTurn, ...], Field(max_length=MAX_HISTORY_TURNS)] = ()
    """Prior turns, oldest first (``004``), for a policy with a history window; R3 keeps
    the newest that fit it. Never evidence, never citable."""

    @field_validator("user_question")
    @classmethod
    def _question_present(cls, value: str) -> str:
        if not value.strip():
            raise PydanticCustomError("value_error", "user_question must not be empty")
        if _SURROGATE_RE.search(value):
            raise PydanticCustomError(
                "value_error", "user_question must be valid Unicode text (a lone surrogate)"
            )
        return value

    @field_validator("results", mode="before")
    @classmethod
    def _results_is_an_array(cls, value: object) -> object:
        # Anything else (a generator, a mapping, a string) would be iterated by pydantic
        # after the input limits were checked, so it is refused before that can happen.
        if not isinstance(value, list | tuple):
            raise PydanticCustomError("list_type", "must be a JSON array of rows")
        return value

    def _check(self) -> None:
        _check_ranks(self.results)
        _check_unique_chunk_ids(self.results)
        rows = len(self.results)
        if self.retrieval_status is RetrievalStatus.SUCCESS and rows == 0:
            raise PydanticCustomError(
                "retrieval_inconsistent",
                "retrieval_status is SUCCESS but results is empty (no top similarity exists)",
            )
        if self.retrieval_status is RetrievalStatus.NO_EVIDENCE and rows > 0:
            raise PydanticCustomError(
                "retrieval_inconsistent", "retrieval_status is NO_EVIDENCE but results is not empty"
            )
        if rows > self.top_k:
            raise PydanticCustomError(
                "retrieval_inconsistent",
                "results holds {rows} rows, more than top_k={top_k}",
                {"rows": rows, "top_k": self.top_k},
            )


def _check_ranks(rows: tuple[RetrievalRow, ...]) -> None:
    """V2: ranks must be exactly 0..n-1, in any input order.

    A gap means a row was lost between retrieval and assembly, which would make the
    rank-to-anchor trail unverifiable, so gaps fail like duplicates do.
    """
    # n distinct ranks, all in 0..n-1, are exactly 0..n-1: checked in C (set, min, max), so
    # a valid 1,000-row bundle costs no Python step per row. Only a bundle that fails walks
    # the rows below, to name the first offending row as before.
    ranks = list(map(_RANK, rows))
    if not ranks or (len(set(ranks)) == len(ranks) and min(ranks) >= 0 and max(ranks) < len(ranks)):
        return
    seen: dict[int, int] = {}
    for index, row in enumerate(rows):
        if row.rank in seen:
            raise PydanticCustomError(
                "rank_integrity",
                "results[{index}].rank: repeats the rank of results[{first}]",
                {"index": index, "first": seen[row.rank]},
            )
        if not 0 <= row.rank < len(rows):
            raise PydanticCustomError(
                "rank_integrity",
                "results[{index}].rank: out of range; {count} rows must be ranked 0..{last} "
                "with no gaps",
                {"index": index, "last": len(rows) - 1, "count": len(rows)},
            )
        seen[row.rank] = index


_RANK = attrgetter("rank")
_CHUNK_ID = attrgetter("chunk_id")


def _check_unique_chunk_ids(rows: tuple[RetrievalRow, ...]) -> None:
    if len(set(map(_CHUNK_ID, rows))) == len(rows):  # in C; the loop names a repeat
        return
    seen: set[str] = set()
    for index, row in enumerate(rows):
        if row.chunk_id in seen:
            raise PydanticCustomError(
                "duplicate_chunk_id",
                "results[{index}].chunk_id: the same chunk_id appears in an earlier row",
                {"index": index},
            )
        seen.add(row.chunk_id)
