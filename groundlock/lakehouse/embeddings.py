"""``LexicalEmbeddings``: the offline default embedding of the lakehouse index.

Moved here from ``examples/handbook_qa.py`` so that ``groundlock index`` works without a
download and the example and the command embed exactly alike. Its cosines run lower than a
neural model's (a question shares only a few words with a paragraph), so a policy's
similarity gates calibrated for a neural embedding refuse nearly everything it finds:
:data:`LEXICAL_EMBEDDING_PREFIX` lets the command line tell such an index apart.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from collections import Counter

from langchain_core.embeddings import Embeddings

__all__ = ["LEXICAL_EMBEDDING_PREFIX", "LexicalEmbeddings"]

LEXICAL_EMBEDDING_PREFIX = "lexical-hash-"
"""Every :class:`LexicalEmbeddings` names itself ``lexical-hash-<dimensions>``."""

_STOPWORDS = frozenset(
    "a an and are as at be before by do does each every for from had has have how if in is "
    "it its need needs of on or the their this to was were what when which why with".split()
)
_WORD = re.compile(r"[A-Za-z0-9]+")


def _stem(word: str) -> str:
    for ending in ("ing", "ed", "es", "s", "e"):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)]
    return word


class LexicalEmbeddings(Embeddings):
    """Hashed word and word-pair counts, L2-normalised: offline, deterministic, explainable.

    A stand-in for an embedding model that keeps indexing free of downloads and network
    calls. Words are lower-cased, stop words dropped and common endings stripped (``failed``
    and ``fail`` match); each word and each pair of neighbouring words lands in one of
    ``dimensions`` buckets by a stable hash (blake2b, never Python's salted ``hash``), so
    the same text gets the same vector in every process.

    >>> embedding = LexicalEmbeddings(dimensions=16)
    >>> embedding.model_name
    'lexical-hash-16'
    >>> embedding.embed_query("Pumps failed") == embedding.embed_documents(["pump fail"])[0]
    True
    """

    def __init__(self, dimensions: int = 2048) -> None:
        if dimensions < 1:
            raise ValueError("dimensions must be at least 1")
        self.dimensions = dimensions

    @property
    def model_name(self) -> str:
        """The name recorded as ``embedding_model`` in the index and in every bundle."""
        return f"{LEXICAL_EMBEDDING_PREFIX}{self.dimensions}"

    def _terms(self, text: str) -> list[str]:
        words = [_stem(w) for w in (m.lower() for m in _WORD.findall(text)) if w not in _STOPWORDS]
        return words + [f"{a} {b}" for a, b in itertools.pairwise(words)]

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dimensions
        for term, count in Counter(self._terms(text)).items():
            bucket = int.from_bytes(hashlib.blake2b(term.encode(), digest_size=4).digest())
            vector[bucket % self.dimensions] += 1.0 + math.log(count)
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        return [v / norm for v in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One vector per chunk (no batching needed: nothing leaves the process)."""
        return [self._vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        """The question is embedded exactly like a chunk, so cosines compare like with like."""
        return self._vector(text)
