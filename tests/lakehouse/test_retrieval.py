"""Retrieval from Delta: exact top-k against a brute-force reference, and filters."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from deltalake import write_deltalake
from langchain_core.embeddings import Embeddings

from groundlock.lakehouse import DeltaVectorStore
from groundlock.lakehouse.chunking import Chunk
from groundlock.lakehouse.indexer import _chunk_table, _embedding_table

ROWS = 100_000
DIM = 64
TYPES = ("MANUAL", "NOTICE", "REPORT", "RECORD", "DRAFT")
MODEL = "synthetic-64"


class Fixed(Embeddings):
    """Embeds any question as one given vector: the store's query path, without a model."""

    model_name = MODEL

    def __init__(self, vector: np.ndarray) -> None:
        self.vector = [float(v) for v in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vector for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vector


def _chunk(i: int) -> Chunk:
    return Chunk(
        chunk_id=f"doc-{i // 10:05d}#{i % 10 + 1}",
        content_sha256=f"{i:064x}",
        document_id=f"doc-{i // 10:05d}",
        document_sha256="0" * 64,
        source_file=f"doc-{i // 10:05d}.md",
        page=None,
        citation_label=None,
        knowledge_id=f"K-{i // 10}",
        knowledge_type=TYPES[i % len(TYPES)],
        semantic_id=None,
        source_reference=f"doc {i // 10}, para. {i % 10 + 1}",
        equipment_id=f"EQ-{i % 7}",
        event_date=None,
        access_tags={},
        chunk_text=f"text {i}",
    )


@pytest.fixture(scope="module")
def big_index(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[Chunk], np.ndarray]:
    """100,000 deterministic vectors (and their chunks), written in four commits."""
    root = tmp_path_factory.mktemp("big")
    vectors = np.random.default_rng(20261125).standard_normal((ROWS, DIM)).astype(np.float32)
    chunks = [_chunk(i) for i in range(ROWS)]
    for part in np.array_split(np.arange(ROWS), 4):
        lo, hi = int(part[0]), int(part[-1]) + 1
        write_deltalake(root / "chunks", _chunk_table(chunks[lo:hi], "v1"), mode="append")
        write_deltalake(
            root / "embeddings",
            _embedding_table(chunks[lo:hi], vectors[lo:hi], MODEL, "v1"),
            mode="append",
        )
    return str(root), chunks, vectors


def _reference(
    vectors: np.ndarray, query: np.ndarray, chunks: list[Chunk], k: int, mask: np.ndarray | None
) -> list[tuple[str, float]]:
    matrix = vectors.astype(np.float64)
    scores = (matrix @ query) / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(query))
    candidates = np.arange(len(chunks)) if mask is None else np.flatnonzero(mask)
    ranked = sorted(candidates, key=lambda i: (-scores[i], chunks[i].chunk_id))[:k]
    return [(chunks[i].chunk_id, float(scores[i])) for i in ranked]


def _query(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(DIM).astype(np.float32).astype(np.float64)


@pytest.mark.parametrize("k", [1, 10, 50])
def test_top_k_over_100k_rows_matches_brute_force(big_index, k: int):
    uri, chunks, vectors = big_index
    query = _query(k)
    store = DeltaVectorStore(uri, Fixed(query))
    found = store.similarity_search_with_score("any question", k=k)
    expected = _reference(vectors, query, chunks, k, None)
    assert [doc.id for doc, _ in found] == [chunk_id for chunk_id, _ in expected]
    assert [score for _, score in found] == pytest.approx([s for _, s in expected], abs=1e-12)
    by_id = {chunk.chunk_id: chunk for chunk in chunks}
    for doc, _ in found:  # each hit's text and citation come from its own chunk row
        assert doc.page_content == by_id[str(doc.id)].chunk_text
        assert doc.metadata["source_reference"] == by_id[str(doc.id)].source_reference


def test_filters_are_pushed_into_the_scan(big_index):
    uri, chunks, vectors = big_index
    query = _query(7)
    store = DeltaVectorStore(uri, Fixed(query))
    wanted = {"knowledge_type": ["NOTICE", "DRAFT"], "equipment_id": "EQ-3"}
    found = store.similarity_search_with_score("q", k=20, filter=wanted)
    mask = np.array(
        [c.knowledge_type in {"NOTICE", "DRAFT"} and c.equipment_id == "EQ-3" for c in chunks]
    )
    expected = _reference(vectors, query, chunks, 20, mask)
    assert [doc.id for doc, _ in found] == [chunk_id for chunk_id, _ in expected]
    assert all(
        doc.metadata["knowledge_type"] in {"NOTICE", "DRAFT"}
        and doc.metadata["equipment_id"] == "EQ-3"
        for doc, _ in found
    )
    assert store.similarity_search_with_score("q", k=5, filter={"document_id": []}) == []


def test_a_filter_on_an_unknown_column_is_refused(big_index):
    uri, _, vectors = big_index
    store = DeltaVectorStore(uri, Fixed(vectors[0]))
    with pytest.raises(ValueError, match="cannot filter on 'chunk_text'"):
        store.similarity_search_with_score("q", k=3, filter={"chunk_text": "x"})


def test_the_question_must_be_embedded_like_the_index(big_index):
    uri, _, _ = big_index
    with pytest.raises(ValueError, match="synthetic-64"):
        DeltaVectorStore(uri, _Other())


class _Other(Fixed):
    model_name = "other-64"

    def __init__(self) -> None:
        super().__init__(np.zeros(DIM))


def test_the_store_is_read_only(big_index):
    uri, _, vectors = big_index
    with pytest.raises(NotImplementedError):
        DeltaVectorStore(uri, Fixed(vectors[0])).add_texts(["x"])


def test_a_missing_index_is_a_clear_error(tmp_path: Path):
    with pytest.raises(ValueError, match="no lakehouse index"):
        DeltaVectorStore(str(tmp_path / "nothing"), Fixed(np.zeros(DIM)))
