"""R1, the retrieval front: a question in, a :class:`~groundlock.RetrievalBundle` out.

``grounded_answer_chain(front=RetrievalFront(source=...))`` answers a plain question from
any LangChain vector store, or any retriever that reports a score per document. The front
ranks what the store returns from 0, maps raw scores to [0, 1] by a named
:class:`~groundlock.ScoreNormalization`, maps chunk metadata onto the row fields, and drops
every row the requesting :class:`~groundlock.Principal` may not see before anything else
reads it. Withheld rows are counted in the bundle (``access_denied_count``) and the audit
trail; their text, ids and scores go nowhere.

A request the front cannot serve (a malformed question, no principal where access control
is on, a retriever that raised) never reaches the store or the model: the front hands R2 a
:class:`~groundlock.core.intake.Rejection`, and the request ends FAILED with its reason.
"""

from __future__ import annotations

import logging
import math
import numbers
import time
import traceback
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Self, TypeAlias, TypeGuard

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.vectorstores import VectorStore, VectorStoreRetriever
from pydantic import (
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)
from typing_extensions import override

from groundlock._lc import asearch_unobserved, relevance_function, search_unobserved
from groundlock.contracts._fields import Identifier
from groundlock.contracts.reasons import ReasonCode
from groundlock.contracts.retrieval import RetrievalBundle
from groundlock.core.access import (
    ROW_FIELDS,
    AccessPolicy,
    Principal,
    ScoreNormalization,
    normalization,
    row_payload,
)
from groundlock.core.intake import Rejection, read_bundle, salvage_identity
from groundlock.core.prompt_build import checked_question
from groundlock.lakehouse.tag_columns import AccessScan
from groundlock.lakehouse.vectorstore import DeltaVectorStore
from groundlock.runnables._stage import PolicyStage
from groundlock.stores.readers import TrailDamaged

__all__ = ["REQUEST_FIELDS", "RetrievalFront"]

logger = logging.getLogger("groundlock.retrieval")

REQUEST_FIELDS = (
    "user_question",
    "request_id",
    "run_id",
    "filters_applied",
    "query_type",
    "history",
)
"""What a request to the front may carry; a bare string is the question. ``query_type`` and
``history`` travel into the bundle untouched (R2 and R3 judge them under the policy)."""

_MAX_NAME = 64

Hits: TypeAlias = list[tuple[Document, float]]
_Admits: TypeAlias = Callable[[Mapping[str, object]], bool]
_Plan: TypeAlias = tuple[dict[str, Any], _Admits | None, dict[str, Any]]


class RetrievalFront(PolicyStage[str | Mapping[str, Any], RetrievalBundle | Rejection]):
    """R1: retrieve, normalise, authorise; a question becomes a bundle R2 can judge.

    ``source`` is a ``VectorStore`` (searched with ``similarity_search_with_score``), a
    ``VectorStoreRetriever`` of search type ``similarity`` (its store and ``search_kwargs``
    are used, so its scores are too), or any ``BaseRetriever`` that puts a score in each
    document's metadata under ``score_key``.

    ``access`` is required: an :class:`AccessPolicy`, or ``None`` for a corpus everyone may
    read, said out loud. With a policy, the principal comes from the run config:
    ``configurable["principal"]`` (a :class:`Principal` or its dict), or else the
    ``requester_role`` (and ``requester_id``) metadata a served app sets from the API key,
    looked up in ``access.roles``. A request with neither fails ``PRINCIPAL_UNRESOLVED``
    before the store is asked. The store is asked for ``fetch_k`` rows (four times ``top_k``
    by default when access is controlled, so that denied rows do not starve the answer); the
    first ``top_k`` admitted rows are ranked 0, 1, ... in the store's order. A
    :class:`~groundlock.DeltaVectorStore` whose index has its access tags as columns is
    searched with the principal's :class:`~groundlock.lakehouse.tag_columns.AccessScan`
    instead: the scan reads only rows the principal may see, so ``top_k`` rows are asked for
    (``fetch_k`` if set), and the front still checks every row it gets back. Building such a
    front with an access policy whose tag no row of the index carries is refused (every row
    would be denied: a misnamed tag, most likely).

    A retriever's search runs without a run of its own: its run would hand every document
    it found, denied ones included, to callbacks, tracers and ``astream_events``. Given to
    :func:`~groundlock.grounded_answer_chain` as its ``front``, it checks questions with the
    chain's policy.

    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langchain_core.vectorstores import InMemoryVectorStore
    >>> store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
    >>> front = RetrievalFront(source=store, index_version="idx-1", embedding_model="fake-8",
    ...                        normalization="cosine", access=None)
    >>> front.invoke("Anything?").retrieval_status.value  # an empty store
    'NO_EVIDENCE'
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str | None = "R1.RetrievalFront"
    source: VectorStore | BaseRetriever
    """Where rows come from."""
    index_version: Identifier
    """Version of the index behind ``source``; recorded in every bundle (reproducibility)."""
    embedding_model: Identifier
    """The embedding model that produced the index's vectors; recorded likewise."""
    normalization: ScoreNormalization
    """How the source's raw scores become similarities (a built-in name or a custom one)."""
    access: AccessPolicy | None
    """Who may see which rows; ``None`` means every row is visible to every requester."""
    top_k: int = Field(default=8, ge=1)
    """At most this many rows go into a bundle."""
    fetch_k: int | None = Field(default=None, ge=1)
    """How many rows to ask the store for (default: ``top_k``, or ``4 * top_k`` with access)."""
    fields: dict[str, str] = Field(default_factory=dict)
    """Row field -> metadata key, where they differ (``{"source_reference": "source"}``)."""
    score_key: str | None = None
    """Metadata key of the score, for a retriever that is not a vector store's."""
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Extra keyword arguments for the vector store's search (a store-native ``filter``)."""
    scan_access: bool = True
    """Filter access in a Delta index's scan (when its tags are columns), not after it.

    ``False`` keeps the check after an over-fetch: the same rows whenever the fetch holds
    ``top_k`` admitted ones, and an ``access_denied_count`` of the denied rows among those
    fetched. Filtered in the scan, a denied row is never read, so the count is only what
    the front itself withheld (0 unless the scan and the front disagree).
    """
    search_filter: Callable[[Principal], Mapping[str, Any]] | None = None
    """Per-principal search arguments, to push access filtering into the store as well.

    The front still checks every returned row itself: a pushed-down filter narrows what is
    fetched, it is never what is trusted.
    """

    _store: VectorStore | None = PrivateAttr(default=None)
    _target: VectorStore | BaseRetriever | None = PrivateAttr(default=None)
    _base_kwargs: dict[str, Any] = PrivateAttr(default_factory=dict)
    _relevance: Callable[[float], float] | None = PrivateAttr(default=None)
    _strategy: str = PrivateAttr(default="")
    _scans_access: bool = PrivateAttr(default=False)

    @classmethod
    def over_index(
        cls, store: DeltaVectorStore, *, top_k: int = 8, access: AccessPolicy | None = None
    ) -> RetrievalFront:
        """R1 over a groundlock Delta index: its version and model come from its tables.

        A Delta index records the embedding model and ``index_version`` it was built with,
        and its scores are cosines; the front takes all three from it, so a bundle always
        names the index it was answered from.
        """
        return cls(
            source=store,
            index_version=store.index_version,
            embedding_model=store.embedding_model or "unknown",
            normalization=normalization("cosine"),
            access=access,
            top_k=top_k,
        )

    @field_validator("normalization", mode="before")
    @classmethod
    def _named_normalization(cls, value: object) -> object:
        return normalization(value) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _usable_source(self) -> Self:
        unknown = sorted(set(self.fields) - set(ROW_FIELDS))
        if unknown:
            raise ValueError(f"fields maps {unknown[0]!r}, which is not a row field")
        TypeAdapter(Identifier).validate_python(self.normalization.name)
        source = self.source
        if isinstance(source, VectorStoreRetriever):
            if source.search_type != "similarity":
                raise ValueError(
                    f"a VectorStoreRetriever of search_type {source.search_type!r} reports "
                    "no scores; use search_type 'similarity' or pass the vector store"
                )
            self._store = source.vectorstore
            self._base_kwargs = {k: v for k, v in source.search_kwargs.items() if k != "k"}
        elif isinstance(source, VectorStore):
            self._store = source
        else:
            if self.score_key is None:
                raise ValueError("a retriever that is not a vector store's needs score_key")
            if self.search_kwargs or self.search_filter or self.normalization.relevance:
                raise ValueError(
                    "search_kwargs, search_filter and the 'relevance' normalisation need a "
                    "vector store"
                )
        self._base_kwargs |= self.search_kwargs
        self._target = self._store if self._store is not None else source
        if self._store is not None:
            self._strategy = f"vector_store:{type(self._store).__name__}"
            if self.normalization.relevance:
                try:
                    self._relevance = relevance_function(self._store)
                except NotImplementedError:
                    raise ValueError(
                        f"{type(self._store).__name__} defines no relevance function; name "
                        "the scale of its scores instead (for example 'cosine')"
                    ) from None
        else:
            self._strategy = f"retriever:{type(source).__name__}"
        self._scans_access = self._access_in_scan()
        return self

    def _access_in_scan(self) -> bool:
        """Whether access is pushed into the store's scan (a Delta index with tag columns)."""
        store = self._store
        if not self.scan_access or self.access is None:
            return False
        if not isinstance(store, DeltaVectorStore):
            return False
        if not store.filters_access:
            logger.warning(
                "the index at %s has no access-tag columns (written before they existed): "
                "access is checked after the search; re-index it to filter in the scan",
                store.uri,
            )
            return False
        missing = store.missing_tags(self.access)
        if missing:
            raise ValueError(
                f"the access policy restricts {missing[0]!r}, which no row of the index "
                "carries: every row would be denied (tag the documents, or fix the name)"
            )
        return True

    @property
    def rows_to_fetch(self) -> int:
        """How many rows each search asks the store for."""
        if self.fetch_k is not None:
            return max(self.fetch_k, self.top_k)
        checked_after = self.access is not None and not self._scans_access
        return self.top_k * (4 if checked_after else 1)

    # -- the stage ------------------------------------------------------------------------

    @override
    def _work(self, stage_input: object, config: RunnableConfig) -> RetrievalBundle | Rejection:
        plan = self._plan(stage_input, config)
        if isinstance(plan, Rejection):
            return plan
        started = time.perf_counter()
        try:
            found: object = self._search(plan[0]["user_question"], plan[2])
        except Exception as exc:  # noqa: BLE001  (a store may fail any way; fail closed)
            found = exc
        return self._outcome(plan, found, started)

    @override
    async def _awork(
        self, stage_input: object, config: RunnableConfig
    ) -> RetrievalBundle | Rejection:
        plan = self._plan(stage_input, config)
        if isinstance(plan, Rejection):
            return plan
        started = time.perf_counter()
        try:
            found: object = await self._asearch(plan[0]["user_question"], plan[2])
        except Exception as exc:  # noqa: BLE001  (a store may fail any way; fail closed)
            found = exc
        return self._outcome(plan, found, started)

    def _outcome(self, plan: _Plan, found: object, started: float) -> RetrievalBundle | Rejection:
        """What the search ``found`` (its answer, or what it raised) becomes, sync or async."""
        request, admits, _ = plan
        if isinstance(found, Exception):
            return self._retriever_failed(request, found)
        if not _are_hits(found):
            return self._retriever_failed(
                request, TypeError("the store did not return (Document, score) pairs")
            )
        return self._bundle(request, admits, found, started)

    @override
    def _fail_closed(self, stage_input: object, reason: ReasonCode, message: str) -> Rejection:
        request_id, run_id = salvage_identity(stage_input)
        return Rejection(reason, message, request_id, run_id)

    # -- before the search: request, principal, search arguments --------------------------

    def _plan(self, stage_input: object, config: RunnableConfig) -> _Plan | Rejection:
        request = self._request(stage_input)
        if isinstance(request, Rejection):
            return request
        principal = self._principal(request, config)
        if isinstance(principal, Rejection):
            return principal
        if principal is None or self.access is None:
            return request, None, dict(self._base_kwargs)
        admits = self.access.checker(principal)
        kwargs = dict(self._base_kwargs)
        if self.search_filter is not None:
            pushed = dict(self.search_filter(principal))
            clash = sorted(set(pushed) & set(kwargs))
            if clash:
                # Replacing a base filter (a tenant restriction, say) would widen the search.
                raise ValueError(
                    f"search_filter returned {clash}, which search_kwargs already sets; "
                    "combine both restrictions in search_filter"
                )
            kwargs |= pushed
        if self._scans_access and "access" not in kwargs:
            kwargs["access"] = AccessScan(self.access, principal)
        return request, admits, kwargs

    def _request(self, stage_input: object) -> dict[str, Any] | Rejection:
        if isinstance(stage_input, str):
            request: dict[str, Any] = {"user_question": stage_input}
        elif isinstance(stage_input, Mapping):
            request = dict(stage_input)
            unknown = [key for key in request if key not in REQUEST_FIELDS]
            if unknown:
                return Rejection(
                    ReasonCode.INPUT_SCHEMA_INVALID,
                    f"{str(unknown[0])[:_MAX_NAME]}: not a field of a retrieval request "
                    f"(expected {', '.join(REQUEST_FIELDS)})",
                    *salvage_identity(request),
                )
        else:
            return Rejection(
                ReasonCode.INPUT_SCHEMA_INVALID,
                "request: expected a question (a string) or a mapping, got "
                f"{type(stage_input).__name__}",
                None,
                None,
            )
        request.setdefault("request_id", uuid.uuid4().hex)
        # The gates R2 and R3 apply to the question, ids and filters (present, within the
        # policy's limits and question token budget), before the store is asked anything.
        probe = read_bundle(self._candidate(request, [], 0, None), self.policy.input_limits)
        if isinstance(probe, Rejection):
            return probe
        counter = self.policy.token_counter
        question = checked_question(probe.user_question, self.policy, counter)
        if isinstance(question, tuple):
            return Rejection(*question, probe.request_id, probe.run_id)
        return request

    def _principal(
        self, request: Mapping[str, Any], config: RunnableConfig
    ) -> Principal | Rejection | None:
        access = self.access
        if access is None:
            return None
        request_id, run_id = salvage_identity(request)

        def unresolved(message: str) -> Rejection:
            logger.warning("retrieval refused (request %s): %s", request_id, message)
            return Rejection(ReasonCode.PRINCIPAL_UNRESOLVED, message, request_id, run_id)

        given = (config.get("configurable") or {}).get("principal")
        metadata = config.get("metadata") or {}
        role = metadata.get("requester_role")
        try:
            if given is not None:
                principal = Principal.model_validate(given)
            elif isinstance(role, str) and role in access.roles:
                requester = metadata.get("requester_id")
                principal = Principal(
                    principal_id=requester if isinstance(requester, str) else role,
                    role=role,
                    grants=access.roles[role],
                )
            elif isinstance(role, str):
                return unresolved("principal: the requester's role has no grants")
            else:
                return unresolved("principal: access control is on and the request names none")
        except ValidationError as exc:
            first = exc.errors(include_url=False, include_input=False)[0]
            where = ".".join(str(part) for part in first["loc"]) or "principal"
            return unresolved(f"principal: {where}: {first['msg']}")
        problem = access.grant_problem(principal.grants)
        return unresolved(f"principal: {problem}") if problem else principal

    # -- the search -----------------------------------------------------------------------

    def _search(self, question: str, kwargs: dict[str, Any]) -> object:
        target = self._target
        if isinstance(target, VectorStore):
            return target.similarity_search_with_score(question, k=self.rows_to_fetch, **kwargs)
        if isinstance(target, BaseRetriever):
            return self._scored(search_unobserved(target, question))
        raise TypeError("the front was built without a source")

    async def _asearch(self, question: str, kwargs: dict[str, Any]) -> object:
        target = self._target
        if isinstance(target, VectorStore):
            return await target.asimilarity_search_with_score(
                question, k=self.rows_to_fetch, **kwargs
            )
        if isinstance(target, BaseRetriever):
            return self._scored(await asearch_unobserved(target, question))
        raise TypeError("the front was built without a source")

    def _scored(self, documents: object) -> Hits:
        if not isinstance(documents, list) or not all(isinstance(d, Document) for d in documents):
            raise TypeError("the retriever did not return a list of Documents")
        key = self.score_key or ""
        return [(doc, doc.metadata.get(key, math.nan)) for doc in documents]

    def _retriever_failed(self, request: Mapping[str, Any], exc: Exception) -> Rejection:
        # Type and frames only: a store's message may carry a URL, a key or chunk text.
        request_id, run_id = salvage_identity(request)
        frames = "".join(traceback.format_tb(exc.__traceback__))
        logger.warning(
            "retriever raised %s (request %s)\n%s", type(exc).__name__, request_id, frames
        )
        # A damaged index is named (its table and data file, or its row): that message
        # never holds a path, a URI or chunk text.
        what = (
            str(exc)
            if isinstance(exc, TrailDamaged)
            else f"the retriever raised {type(exc).__name__}"
        )
        return Rejection(ReasonCode.RETRIEVAL_FAILED, f"retrieval: {what}", request_id, run_id)

    # -- after the search: authorise, rank, normalise -------------------------------------

    def _bundle(
        self,
        request: dict[str, Any],
        admits: _Admits | None,
        hits: Hits,
        started: float,
    ) -> RetrievalBundle | Rejection:
        rows: list[dict[str, object]] = []
        denied = 0
        for document, raw in hits:
            if admits is not None and not admits(document.metadata):
                denied += 1
                continue
            if len(rows) == self.top_k:
                continue  # keep counting what this principal could not have seen
            rows.append(
                row_payload(
                    rank=len(rows),
                    similarity=self._similarity(raw),
                    text=document.page_content,
                    document_id=document.id,
                    metadata=document.metadata,
                    fields=self.fields,
                )
            )
        latency = (time.perf_counter() - started) * 1000.0
        candidate = self._candidate(request, rows, denied if self.access else None, latency)
        return read_bundle(candidate, self.policy.input_limits)

    def _similarity(self, raw: object) -> float:
        if self._relevance is not None:
            if not _is_number(raw):
                return math.nan
            try:
                raw = self._relevance(float(raw))  # type: ignore[arg-type]
            except ArithmeticError:
                return math.nan
        return self.normalization.apply(raw)

    def _candidate(
        self,
        request: Mapping[str, Any],
        rows: list[dict[str, object]],
        denied: int | None,
        latency_ms: float | None,
    ) -> dict[str, Any]:
        return {
            **request,
            "retrieval_status": "SUCCESS" if rows else "NO_EVIDENCE",
            "index_version": self.index_version,
            "embedding_model": self.embedding_model,
            "top_k": self.top_k,
            "results": rows,
            "retrieval_latency_ms": latency_ms,
            "retrieval_strategy": self._strategy,
            "score_normalization": self.normalization.name,
            "access_denied_count": denied,
        }


def _are_hits(found: object) -> TypeGuard[Hits]:
    """Whether the store answered with (Document, raw score) pairs, as the API promises."""
    return isinstance(found, list) and all(
        isinstance(hit, tuple) and len(hit) == 2 and isinstance(hit[0], Document) for hit in found
    )


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)
