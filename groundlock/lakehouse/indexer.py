"""Writing the index: chunks and their embeddings as two Delta tables under one root.

``<root>/chunks`` holds each chunk's text and citation metadata, ``<root>/embeddings`` its
vector with the columns retrieval filters on. Three properties shape the write path:

* **Idempotent by content hash.** A document whose hash (bytes plus chunking settings) the
  embeddings table already records is neither re-chunked nor re-embedded, and a run that
  changes nothing commits nothing: the tables' Delta versions stay where they were.
* **One commit per table per run.** Changed documents are replaced with one predicated
  overwrite (delta-rs's ``predicate``: remove the rows of those documents, add the new ones,
  atomically), so a reader never sees a document half-replaced within a table. Across the
  two tables a reader may briefly see a new chunk under an old vector's id; retrieval
  drops a hit whose chunk hash disagrees with the vector's, so it is never mis-cited.
* **One embedding per index.** Vectors of different models are not comparable; indexing
  with another model than the one recorded is refused (index into a new root instead).

Documents no longer in the indexed folder are removed: the index mirrors the folder.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from arro3.core import Array, DataType, Field, Schema, Table, fixed_size_list_array

from groundlock.lakehouse.chunking import Chunk, chunk_document, discover, read_document
from groundlock.lakehouse.embeddings import LexicalEmbeddings
from groundlock.stores.location import delta_location

if TYPE_CHECKING:
    from deltalake import DeltaTable
    from langchain_core.embeddings import Embeddings

__all__ = [
    "CHUNKS",
    "EMBEDDINGS",
    "FILTER_COLUMNS",
    "IndexReport",
    "embedding_name",
    "index_documents",
    "quote",
    "read_rows",
]

CHUNKS = "chunks"
EMBEDDINGS = "embeddings"
INDEX_VERSION_KEY = "groundlock.index_version"
"""Commit metadata key under which every index commit records the corpus's index version."""
INDEXED = "INDEXED"

FILTER_COLUMNS = (
    "chunk_id",
    "document_id",
    "source_file",
    "knowledge_type",
    "equipment_id",
    "index_version",
)
"""Embeddings-table columns a search may filter on (pushed into the scan's ``WHERE``)."""

_STRING = DataType.string()
CHUNK_SCHEMA = Schema(
    [
        Field("chunk_id", _STRING, nullable=False),
        Field("content_sha256", _STRING, nullable=False),
        Field("document_id", _STRING, nullable=False),
        Field("document_sha256", _STRING, nullable=False),
        Field("source_file", _STRING, nullable=False),
        Field("page", DataType.int64(), nullable=True),
        Field("citation_label", _STRING, nullable=True),
        Field("knowledge_id", _STRING, nullable=False),
        Field("knowledge_type", _STRING, nullable=False),
        Field("semantic_id", _STRING, nullable=True),
        Field("source_reference", _STRING, nullable=False),
        Field("equipment_id", _STRING, nullable=True),
        Field("event_date", _STRING, nullable=True),
        Field("access_tags", _STRING, nullable=False),
        Field("chunk_text", _STRING, nullable=False),
        Field("index_version", _STRING, nullable=False),
    ]
)
"""The chunks table: everything a citation needs, plus the access tags as a JSON object."""


@dataclass(frozen=True)
class IndexReport:
    """What one indexing run did."""

    index_version: str
    embedding_model: str
    documents: int
    """Documents found in the source."""
    changed: tuple[str, ...]
    """Documents (re-)indexed by this run."""
    removed: tuple[str, ...]
    """Documents deleted from the index because the source no longer has them."""
    chunks_written: int
    seconds: float
    chunks_version: int | None
    embeddings_version: int | None
    """The tables' Delta versions after the run."""

    @property
    def wrote(self) -> bool:
        """Whether the run committed anything."""
        return bool(self.changed or self.removed)


def embedding_name(embedding: Embeddings) -> str:
    """The embedding's recorded name: its ``model_name`` or ``model``, else its class."""
    for attribute in ("model_name", "model"):
        value = getattr(embedding, attribute, None)
        if isinstance(value, str) and value:
            return value
    return type(embedding).__name__


def quote(value: str) -> str:
    """A SQL string literal (delta-rs predicates and DataFusion queries)."""
    return "'" + value.replace("'", "''") + "'"


def read_rows(table: DeltaTable, sql: str) -> list[dict[str, Any]]:
    """Rows of a query over ``table`` (registered as ``t``), through delta-rs's engine.

    Never pyarrow: it is not a dependency, and it can abort at interpreter exit after a read.
    """
    from deltalake import QueryBuilder  # noqa: PLC0415

    result = QueryBuilder().register("t", table).execute(sql).read_all()
    names = result.schema.names
    columns = [column.to_pylist() for column in result.columns]
    return [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]


def _open(uri: str, options: dict[str, str] | None) -> DeltaTable | None:
    from deltalake import DeltaTable  # noqa: PLC0415

    if not DeltaTable.is_deltatable(uri, storage_options=options):
        return None
    return DeltaTable(uri, storage_options=options)


def _table_uri(root: str | Path, name: str) -> str:
    return f"{delta_location(root)}/{name}"


def _chunk_table(chunks: Sequence[Chunk], index_version: str) -> Table:
    def column(name: str) -> list[Any]:
        return [getattr(chunk, name) for chunk in chunks]

    arrays = []
    for field in (CHUNK_SCHEMA.field(i) for i in range(len(CHUNK_SCHEMA))):
        if field.name == "access_tags":
            values: list[Any] = [chunk.access_tags_json for chunk in chunks]
        elif field.name == "index_version":
            values = [index_version] * len(chunks)
        else:
            values = column(field.name)
        arrays.append(Array(values, field.type))
    return Table.from_arrays(arrays, schema=CHUNK_SCHEMA)


def _embedding_table(
    chunks: Sequence[Chunk], vectors: np.ndarray, model: str, index_version: str
) -> Table:
    rows, dim = vectors.shape
    flat = Array.from_numpy(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
    now = datetime.now(UTC)
    micros = int(now.timestamp()) * 1_000_000 + now.microsecond
    columns: dict[str, Array] = {
        "chunk_id": Array([c.chunk_id for c in chunks], _STRING),
        "content_sha256": Array([c.content_sha256 for c in chunks], _STRING),
        "document_id": Array([c.document_id for c in chunks], _STRING),
        "document_sha256": Array([c.document_sha256 for c in chunks], _STRING),
        "source_file": Array([c.source_file for c in chunks], _STRING),
        "knowledge_type": Array([c.knowledge_type for c in chunks], _STRING),
        "equipment_id": Array([c.equipment_id for c in chunks], _STRING),
        "embedding": fixed_size_list_array(flat, dim),
        "embedding_model": Array([model] * rows, _STRING),
        "embedding_dim": Array([dim] * rows, DataType.int64()),
        "indexed_ts": Array([micros] * rows, DataType.int64()).cast(
            DataType.timestamp("us", tz="UTC")
        ),
        "index_status": Array([INDEXED] * rows, _STRING),
        "index_version": Array([index_version] * rows, _STRING),
    }
    return Table.from_arrays(list(columns.values()), names=list(columns))


def _write(  # noqa: PLR0917  (private; every call site passes all six in one order)
    uri: str,
    table: DeltaTable | None,
    data: Table | None,
    documents: Sequence[str],
    index_version: str,
    options: dict[str, str] | None,
) -> None:
    """Replace ``documents``' rows with ``data`` in one commit (or delete them, or create)."""
    from deltalake import CommitProperties, write_deltalake  # noqa: PLC0415

    commit = CommitProperties(custom_metadata={INDEX_VERSION_KEY: index_version})
    predicate = f"document_id IN ({', '.join(quote(d) for d in sorted(documents))})"
    if table is None:
        if data is not None and data.num_rows:
            write_deltalake(
                uri, data, mode="append", storage_options=options, commit_properties=commit
            )
    elif data is None or not data.num_rows:
        table.delete(predicate, commit_properties=commit)
    else:
        write_deltalake(
            table, data, mode="overwrite", predicate=predicate, commit_properties=commit
        )


def _indexed(table: DeltaTable | None) -> tuple[dict[str, str], set[str]]:
    """document_id -> document hash, and the embedding models, the table records."""
    if table is None:
        return {}, set()
    rows = read_rows(table, "SELECT DISTINCT document_id, document_sha256, embedding_model FROM t")
    return (
        {str(r["document_id"]): str(r["document_sha256"]) for r in rows},
        {str(r["embedding_model"]) for r in rows},
    )


def index_documents(
    source: str | Path,
    index: str | Path,
    embedding: Embeddings | None = None,
    *,
    max_chars: int = 1200,
    batch_size: int = 256,
    storage_options: dict[str, str] | None = None,
) -> IndexReport:
    """Index the Markdown, text (and, with pypdf, PDF) files under ``source`` into ``index``.

    ``index`` is a local path or any URI delta-rs opens (``storage_options`` go to it
    unchanged); ``embedding`` any LangChain ``Embeddings``, by default the offline
    :class:`LexicalEmbeddings`. Only new or changed documents are chunked and embedded;
    documents gone from ``source`` are removed from the index.
    """
    started = time.perf_counter()
    embedding = embedding or LexicalEmbeddings()
    model = embedding_name(embedding)
    root = Path(source)
    if not root.exists():
        raise ValueError(f"no such file or folder: {root}")
    settings = f"max_chars={max_chars}"
    documents = [read_document(path, root, settings=settings) for path in discover(root)]
    ids = [d.document_id for d in documents]
    if len(set(ids)) != len(ids):
        raise ValueError("two documents share one document_id")
    chunks_uri, vectors_uri = _table_uri(index, CHUNKS), _table_uri(index, EMBEDDINGS)
    chunk_table = _open(chunks_uri, storage_options)
    vector_table = _open(vectors_uri, storage_options)
    known, models = _indexed(vector_table)
    if models - {model}:
        raise ValueError(
            f"the index holds vectors of {', '.join(sorted(models))}, not {model}; vectors of "
            "different models cannot be compared: index into a new location"
        )
    corpus = sorted((d.document_id, d.content_sha256) for d in documents)
    index_version = "lh-" + hashlib.sha256(repr((model, corpus)).encode()).hexdigest()[:16]
    changed = [d for d in documents if known.get(d.document_id) != d.content_sha256]
    removed = sorted(set(known) - set(ids))
    chunks = [c for d in changed for c in chunk_document(d, max_chars=max_chars)]
    if changed or removed:
        vectors = _embed(embedding, [c.chunk_text for c in chunks], batch_size)
        touched = [d.document_id for d in changed] + removed
        data = _chunk_table(chunks, index_version) if chunks else None
        embedded = _embedding_table(chunks, vectors, model, index_version) if chunks else None
        # Chunks first, then vectors: a vector is never visible before its chunk row.
        _write(chunks_uri, chunk_table, data, touched, index_version, storage_options)
        _write(vectors_uri, vector_table, embedded, touched, index_version, storage_options)
        chunk_table = _open(chunks_uri, storage_options)
        vector_table = _open(vectors_uri, storage_options)
    return IndexReport(
        index_version=index_version,
        embedding_model=model,
        documents=len(documents),
        changed=tuple(d.document_id for d in changed),
        removed=tuple(removed),
        chunks_written=len(chunks),
        seconds=time.perf_counter() - started,
        chunks_version=None if chunk_table is None else chunk_table.version(),
        embeddings_version=None if vector_table is None else vector_table.version(),
    )


def _embed(embedding: Embeddings, texts: list[str], batch_size: int) -> np.ndarray:
    """All vectors as one float32 matrix; every vector must have the same dimension."""
    vectors: list[list[float]] = []
    for start in range(0, len(texts), batch_size):
        vectors.extend(embedding.embed_documents(texts[start : start + batch_size]))
    if not vectors:
        return np.zeros((0, 1), dtype=np.float32)
    if len({len(v) for v in vectors}) != 1:
        raise ValueError("the embedding returned vectors of different dimensions")
    return np.asarray(vectors, dtype=np.float32)
