"""What the retrieval front adds to a vector store search.

    python benchmarks/retrieval.py [--repeat N]

A real ``InMemoryVectorStore`` over 2,000 chunks (64-dimensional vectors) answers the
question once for k = 20 and once for k = 80; its search time is printed for scale. The
fronts are then timed over a store that replays those exact answers instantly, so what is
measured is the front's own work, not the noise of a 4 ms numpy search:

1. ``RetrievalFront`` with ``access=None``: ranking, normalisation, metadata mapping, the
   request's gates and the bundle's validation, for 20 rows;
2. ``RetrievalFront`` with an ``AccessPolicy`` (one unordered and one ordered attribute):
   4 x 20 rows fetched and judged, about half denied, 20 kept.

Medians over ``--repeat`` calls, in one run. No target is set; the figures say what the
front costs next to the search it wraps.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable, Iterable

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.runnables import RunnableConfig
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from groundlock import AccessPolicy, Principal, RetrievalBundle, RetrievalFront

QUESTION = "How often is the case drain filter of the hydraulic pump replaced?"
ACCESS = AccessPolicy(
    attributes=("business_unit",),
    levels={"sensitivity_level": ("PUBLIC", "INTERNAL", "CONFIDENTIAL")},
)
TECHNICIAN = Principal(
    principal_id="tech", grants={"business_unit": "MARINE", "sensitivity_level": "INTERNAL"}
)


class ReplayStore(VectorStore):
    """Answers every search with what the real store answered for the same k."""

    def __init__(self, answers: dict[int, list[tuple[Document, float]]]) -> None:
        self.answers = answers

    def similarity_search_with_score(
        self, query: str, k: int = 4, **kwargs: object
    ) -> list[tuple[Document, float]]:
        return self.answers[k]

    def similarity_search(self, query: str, k: int = 4, **kwargs: object) -> list[Document]:
        return [document for document, _ in self.answers[k]]

    def add_texts(
        self, texts: Iterable[str], metadatas: object = None, **kwargs: object
    ) -> list[str]:
        raise NotImplementedError

    @classmethod
    def from_texts(
        cls, texts: list[str], embedding: Embeddings, metadatas: object = None, **kwargs: object
    ) -> ReplayStore:
        raise NotImplementedError


class SeededEmbeddings(Embeddings):
    """A fixed pseudo-random unit vector per text: a stand-in for an embedding provider."""

    def _vector(self, text: str) -> list[float]:
        rng = random.Random(text)
        vector = [rng.gauss(0.0, 1.0) for _ in range(64)]
        norm = sum(v * v for v in vector) ** 0.5
        return [v / norm for v in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One vector per text."""
        return [self._vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        """The question's vector."""
        return self._vector(text)


def _store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(SeededEmbeddings())
    chunks = []
    for i in range(2000):
        metadata = {
            "knowledge_id": f"DOC-{i // 5}",
            "source_reference": f"Manual {i // 5}, para. {i % 5}",
            "business_unit": "MARINE" if i % 2 else "RAIL",
            "sensitivity_level": "INTERNAL",
        }
        text = f"Paragraph {i}: the filter is replaced every {250 + i} operating hours."
        chunks.append(Document(id=f"c{i}", page_content=text, metadata=metadata))
    store.add_documents(chunks)
    return store


def _median_us(call: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def main() -> None:
    """Print the medians and what the front adds."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1000)
    repeat = parser.parse_args().repeat
    store = _store()
    searches = {
        "store search, k=20": lambda: store.similarity_search_with_score(QUESTION, k=20),
        "store search, k=80": lambda: store.similarity_search_with_score(QUESTION, k=80),
    }
    replay = ReplayStore({k: store.similarity_search_with_score(QUESTION, k=k) for k in (20, 80)})
    common = {"index_version": "bench", "embedding_model": "seeded-64", "normalization": "cosine"}
    open_front = RetrievalFront(source=replay, access=None, top_k=20, **common)
    guarded = RetrievalFront(source=replay, access=ACCESS, top_k=20, **common)
    as_technician: RunnableConfig = {"configurable": {"principal": TECHNICIAN}}
    bundle = guarded.invoke(QUESTION, as_technician)
    if not isinstance(bundle, RetrievalBundle) or len(bundle.results) != 20:
        raise SystemExit(f"the guarded front did not fill a 20-row bundle: {bundle!r}")

    fronts = {
        "front, no access control": lambda: open_front.invoke(QUESTION),
        "front, access control": lambda: guarded.invoke(QUESTION, as_technician),
    }
    for call in [*searches.values(), *fronts.values()]:  # warm up
        for _ in range(50):
            call()
    print(f"2,000 chunks, 20 rows per bundle, median of {repeat} calls")
    for name, call in searches.items():
        print(f"  {name:<26} {_median_us(call, max(repeat // 10, 20)):8.0f} us  (for scale)")
    for name, call in fronts.items():
        print(f"  {name:<26} {_median_us(call, repeat):8.0f} us  (the front's own work)")
    print(f"  access control: {bundle.access_denied_count} of 80 fetched rows denied")


if __name__ == "__main__":
    main()
