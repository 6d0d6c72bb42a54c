"""Stand-ins for what sits behind a retriever: an embedding provider and a remote index.

``TableEmbeddings`` replaces an embedding API (a remote provider) with a lookup table, so a
real ``InMemoryVectorStore`` returns exactly the cosines a test chose. ``FixedScoreStore``
and ``ScoredRetriever`` stand in for a remote vector index: real LangChain ``VectorStore`` and
``BaseRetriever`` subclasses whose answers, raw scores and failures are scripted, and which
record every search they receive.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from pydantic import Field

QUESTION = "How often is the case drain filter replaced?"


class TableEmbeddings(Embeddings):
    """Vectors from a table; any text not in it is orthogonal to everything in it."""

    def __init__(self, vectors: dict[str, list[float]], dimensions: int) -> None:
        self.vectors = vectors
        self.dimensions = dimensions

    def _vector(self, text: str) -> list[float]:
        return self.vectors.get(text, [0.0] * (self.dimensions - 1) + [1.0])

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


def cosine_store(scored: Sequence[tuple[Document, float]]) -> InMemoryVectorStore:
    """A real in-memory store whose cosine with :data:`QUESTION` is the given score per doc."""
    vectors = {QUESTION: [1.0, 0.0, 0.0]}
    for document, cosine in scored:
        vectors[document.page_content] = [cosine, math.sqrt(max(0.0, 1 - cosine**2)), 0.0]
    store = InMemoryVectorStore(TableEmbeddings(vectors, 3))
    store.add_documents([document for document, _ in scored])
    return store


def doc(chunk_id: str, text: str | None = None, **metadata: Any) -> Document:
    """A chunk as an index holds it: ``knowledge_id`` and any access tags in its metadata."""
    metadata.setdefault("knowledge_id", f"K-{chunk_id}")
    return Document(id=chunk_id, page_content=text or f"Text of {chunk_id}.", metadata=metadata)


class FixedScoreStore(VectorStore):
    """A vector index that answers every search with the same scored documents, in order."""

    def __init__(
        self,
        hits: Iterable[tuple[Document, Any]],
        *,
        fails_with: Exception | None = None,
        relevance: Callable[[float], float] | None = None,
    ) -> None:
        self.hits = list(hits)
        self.fails_with = fails_with
        self.relevance = relevance
        self.searches: list[dict[str, Any]] = []

    def similarity_search_with_score(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        self.searches.append({"query": query, "k": k, **kwargs})
        if self.fails_with is not None:
            raise self.fails_with
        keep = kwargs.get("filter")
        return [hit for hit in self.hits if keep is None or keep(hit[0])][:k]

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        if self.relevance is None:
            raise NotImplementedError
        return self.relevance

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return [document for document, _ in self.similarity_search_with_score(query, k, **kwargs)]

    def add_texts(self, texts: Iterable[str], metadatas: Any = None, **kwargs: Any) -> list[str]:
        raise NotImplementedError

    @classmethod
    def from_texts(
        cls, texts: list[str], embedding: Embeddings, metadatas: Any = None, **kwargs: Any
    ) -> FixedScoreStore:
        raise NotImplementedError


class ScoredRetriever(BaseRetriever):
    """A retriever (say, a hosted search service) that reports scores in document metadata."""

    documents: list[Document]
    calls: list[str] = Field(default_factory=list)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        self.calls.append(query)
        return self.documents
