"""The lakehouse loop's first half: index documents into Delta tables, retrieve from them.

:func:`index_documents` chunks Markdown, text and (with the ``pdf`` extra) PDF files,
embeds them with any LangChain ``Embeddings`` (by default the offline
:class:`LexicalEmbeddings`) and writes a chunks table and an embeddings table, incrementally
by content hash. It refuses (:class:`DocumentRefused`, naming the file) a document it cannot
read within its limits, and one whose rows R2 would refuse under the policy the index is
answered under. :class:`DeltaVectorStore` is a LangChain ``VectorStore`` over them, so
``RetrievalFront(source=DeltaVectorStore(...), normalization="cosine")`` answers from the
index like from any other store. :func:`run_eval` closes the loop: it answers a gold set
through a chain, scores it deterministically and logs the scores to a Delta table
(:mod:`groundlock.lakehouse.evaluation`). :func:`list_chunks` and :func:`list_documents`
say what an index holds (the chunk ids a gold set names). A lexical index is answered
under :data:`LEXICAL_POLICY` or a preset's lexical twin (:data:`LEXICAL_TWINS`,
:mod:`groundlock.lakehouse.calibration`).

A room at the level of :mod:`groundlock.stores`: it imports the core's contracts and text
helpers, never the runnables or the command line.

Each name loads on first use (PEP 562): the command line reads the calibration's and the
chunker's constants without loading delta-rs, NumPy or LangChain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from groundlock._lazy import lazy_names
from groundlock.policies import Policy, load_policy

if TYPE_CHECKING:
    from groundlock.lakehouse.calibration import (
        LEXICAL_POLICY,
        LEXICAL_TWINS,
        calibration_problem,
        lexical_twin,
    )
    from groundlock.lakehouse.chunking import DocumentRefused
    from groundlock.lakehouse.embeddings import LEXICAL_EMBEDDING_PREFIX, LexicalEmbeddings
    from groundlock.lakehouse.evaluation import (
        EvalItem,
        EvalRow,
        RunSummary,
        compare,
        read_eval_log,
        read_eval_rows,
        run_eval,
        set_review,
        summary,
    )
    from groundlock.lakehouse.indexer import IndexReport, index_documents
    from groundlock.lakehouse.listing import (
        IndexListing,
        ListedChunk,
        ListedDocument,
        list_chunks,
        list_documents,
    )
    from groundlock.lakehouse.token_chunking import CharChunking, TokenChunking
    from groundlock.lakehouse.vectorstore import DeltaVectorStore

__all__ = [
    "LEXICAL_EMBEDDING_PREFIX",
    "LEXICAL_POLICY",
    "LEXICAL_TWINS",
    "CharChunking",
    "DeltaVectorStore",
    "DocumentRefused",
    "EvalItem",
    "EvalRow",
    "IndexListing",
    "IndexReport",
    "LexicalEmbeddings",
    "ListedChunk",
    "ListedDocument",
    "RunSummary",
    "TokenChunking",
    "calibration_problem",
    "compare",
    "index_documents",
    "lexical_policy",
    "lexical_twin",
    "list_chunks",
    "list_documents",
    "open_lexical_index",
    "read_eval_log",
    "read_eval_rows",
    "run_eval",
    "set_review",
    "summary",
]

_LAZY: dict[str, str] = {
    "CharChunking": "groundlock.lakehouse.token_chunking",
    "TokenChunking": "groundlock.lakehouse.token_chunking",
    "DeltaVectorStore": "groundlock.lakehouse.vectorstore",
    "DocumentRefused": "groundlock.lakehouse.chunking",
    "EvalItem": "groundlock.lakehouse.evaluation",
    "EvalRow": "groundlock.lakehouse.evaluation",
    "IndexListing": "groundlock.lakehouse.listing",
    "IndexReport": "groundlock.lakehouse.indexer",
    "LEXICAL_EMBEDDING_PREFIX": "groundlock.lakehouse.embeddings",
    "LEXICAL_POLICY": "groundlock.lakehouse.calibration",
    "LEXICAL_TWINS": "groundlock.lakehouse.calibration",
    "LexicalEmbeddings": "groundlock.lakehouse.embeddings",
    "ListedChunk": "groundlock.lakehouse.listing",
    "ListedDocument": "groundlock.lakehouse.listing",
    "RunSummary": "groundlock.lakehouse.evaluation",
    "calibration_problem": "groundlock.lakehouse.calibration",
    "compare": "groundlock.lakehouse.evaluation",
    "index_documents": "groundlock.lakehouse.indexer",
    "lexical_twin": "groundlock.lakehouse.calibration",
    "list_chunks": "groundlock.lakehouse.listing",
    "list_documents": "groundlock.lakehouse.listing",
    "read_eval_log": "groundlock.lakehouse.evaluation",
    "read_eval_rows": "groundlock.lakehouse.evaluation",
    "run_eval": "groundlock.lakehouse.evaluation",
    "set_review": "groundlock.lakehouse.evaluation",
    "summary": "groundlock.lakehouse.evaluation",
}
"""Each public name and the module it is defined in."""

__getattr__, __dir__ = lazy_names(__name__, _LAZY, __all__)


def lexical_policy() -> Policy:
    """:data:`LEXICAL_POLICY`, loaded and checked against its lock."""
    from groundlock.lakehouse.calibration import LEXICAL_POLICY  # noqa: PLC0415

    return load_policy(LEXICAL_POLICY)


def open_lexical_index(
    uri: str, *, storage_options: dict[str, str] | None = None
) -> DeltaVectorStore:
    """The Delta index at ``uri``, with the lexical embedding of the dimension it recorded.

    What the command line and the Spark runner open an index with: they embed questions
    only with the offline lexical embedding (from Python, pass any ``Embeddings`` to
    :class:`DeltaVectorStore`).

    Raises:
        ValueError: the index is empty or was embedded with another model.
    """
    from groundlock.lakehouse.embeddings import (  # noqa: PLC0415
        LEXICAL_EMBEDDING_PREFIX,
        LexicalEmbeddings,
    )
    from groundlock.lakehouse.vectorstore import DeltaVectorStore  # noqa: PLC0415

    probe = DeltaVectorStore(
        uri, LexicalEmbeddings(), storage_options=storage_options, check_model=False
    )
    model = probe.embedding_model
    if model is None:
        raise ValueError(f"the index at {uri} is empty")
    if not model.startswith(LEXICAL_EMBEDDING_PREFIX):
        raise ValueError(
            f"the index was embedded with {model}; only a lexical index opens without its "
            "embedding (use DeltaVectorStore with that model's Embeddings)"
        )
    dimensions = int(model.removeprefix(LEXICAL_EMBEDDING_PREFIX))
    return DeltaVectorStore(uri, LexicalEmbeddings(dimensions), storage_options=storage_options)
