"""``DeltaVectorStore``: a LangChain ``VectorStore`` over the lakehouse index's Delta tables.

Search is exact (a full cosine scan), not approximate: an audited answer should cite the
rows an auditor re-running the query would find. The scan streams the embeddings table in
record batches through delta-rs's query engine and keeps a running top-k, so memory is
bounded by one batch plus k rows whatever the table's size; filters become the scan's
``WHERE`` clause, so delta-rs skips files (by their column statistics) and rows before any
vector is read. Only the top-k chunks' rows are then read from the chunks table. An
:class:`~groundlock.lakehouse.tag_columns.AccessScan` (``access=``, which the retrieval
front passes) becomes part of that ``WHERE`` too, on the index's access-tag columns: a
denied row is never read, and the top-k are the principal's own.

Documents come back with the chunk's columns as metadata, its access tags spread into
top-level keys (what :class:`~groundlock.AccessPolicy` checks) and ``knowledge_type``
also under ``knowledge_type_effective`` (the row field it fills), so
``RetrievalFront(source=DeltaVectorStore(...), normalization="cosine")`` needs no
``fields`` mapping. The store is read-only: the index is written by
:func:`~groundlock.lakehouse.index_documents`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from arro3.core import Array, list_flatten
from langchain_core.documents import Document
from langchain_core.vectorstores import VectorStore
from typing_extensions import override

from groundlock.lakehouse.indexer import (
    CHUNKS,
    EMBEDDINGS,
    FILTER_COLUMNS,
    INDEX_VERSION_KEY,
    read_rows,
    table_label,
)
from groundlock.lakehouse.tag_columns import (
    TAGS_MARKER,
    AccessScan,
    access_condition,
    missing_tags,
    quote,
)
from groundlock.stores.location import delta_location
from groundlock.stores.readers import TrailDamaged, check_files, query_batches

if TYPE_CHECKING:
    from arro3.core import RecordBatch
    from deltalake import DeltaTable
    from langchain_core.embeddings import Embeddings

    from groundlock.core.access import AccessPolicy

__all__ = ["DeltaVectorStore", "access_tags"]

_METADATA_SKIP = frozenset({"chunk_text", "access_tags"})


class DeltaVectorStore(VectorStore):
    """Exact cosine top-k over ``<uri>/embeddings``, texts and citations from ``<uri>/chunks``.

    ``embedding`` must be the model the index was built with (checked against the recorded
    ``embedding_model`` unless ``check_model=False``). ``storage_options`` go to delta-rs
    unchanged. The tables are opened at their latest version when the store is created;
    :meth:`refresh` moves to the newest one.

    ``filter`` (of every search) maps columns of :data:`FILTER_COLUMNS` to a value or a
    list of values (``{"knowledge_type": ["MANUAL", "NOTICE"], "equipment_id": "T7"}``).
    ``access`` (an :class:`~groundlock.lakehouse.tag_columns.AccessScan`) restricts the
    scan to the rows its principal may see, on an index that has its access tags as
    columns (:attr:`filters_access`); an index written before them refuses it (the caller
    checks the rows after the search instead, as the retrieval front does).

    A damaged index raises :class:`~groundlock.stores.readers.TrailDamaged` in one line
    naming the table and the data file (never a path): a file gone from a local index when
    the store is opened, one that cannot be read when it is searched, and a chunk row whose
    access tags are not the indexer's JSON object when it is retrieved.
    :class:`~groundlock.RetrievalFront` fails such a request closed (``RETRIEVAL_FAILED``),
    with that line as the audit record's message.
    """

    def __init__(
        self,
        uri: str,
        embedding: Embeddings,
        *,
        storage_options: dict[str, str] | None = None,
        check_model: bool = True,
    ) -> None:
        from deltalake import DeltaTable  # noqa: PLC0415

        self.uri = delta_location(uri)
        self.embedding = embedding
        self.storage_options = storage_options
        for name in (CHUNKS, EMBEDDINGS):
            if not DeltaTable.is_deltatable(self._uri(name), storage_options=storage_options):
                raise ValueError(f"no lakehouse index at {self.uri} (no {name} table)")
        self._chunks: DeltaTable = self._open(CHUNKS)
        self._vectors: DeltaTable = self._open(EMBEDDINGS)
        if check_model:
            from groundlock.lakehouse.indexer import embedding_name  # noqa: PLC0415

            recorded, ours = self.embedding_model, embedding_name(embedding)
            if recorded not in (None, ours):
                raise ValueError(
                    f"the index was embedded with {recorded}, not {ours}: its vectors and "
                    "the question's would not be comparable"
                )

    def _uri(self, name: str) -> str:
        return f"{self.uri}/{name}"

    def _open(self, name: str) -> DeltaTable:
        from deltalake import DeltaTable  # noqa: PLC0415

        try:
            table = DeltaTable(self._uri(name), storage_options=self.storage_options)
        except Exception as exc:  # noqa: BLE001  (a damaged log: named by kind, never by path)
            raise TrailDamaged(
                f"{table_label(name)} cannot be opened ({type(exc).__name__})"
            ) from None
        check_files(table, table_label(name))  # a file gone is named now, not mid-search
        return table

    def refresh(self) -> None:
        """Read the tables' newest versions (a running service re-reads after re-indexing)."""
        self._chunks.update_incremental()
        self._vectors.update_incremental()

    @property
    @override
    def embeddings(self) -> Embeddings:
        return self.embedding

    @property
    def embedding_model(self) -> str | None:
        """The model the index's vectors came from (None for an empty index)."""
        rows = read_rows(
            self._vectors, "SELECT embedding_model FROM t LIMIT 1", table_label(EMBEDDINGS)
        )
        return str(rows[0]["embedding_model"]) if rows else None

    @property
    def index_version(self) -> str:
        """The corpus's index version, as the last indexing commit recorded it.

        Content-derived (embedding model and every document's hash), so the same corpus
        indexed anywhere has the same version; ``delta-v<N>`` for a table written otherwise.
        """
        for commit in self._vectors.history(1):
            value = commit.get(INDEX_VERSION_KEY)
            if isinstance(value, str) and value:
                return value
        return f"delta-v{self._vectors.version()}"

    @property
    def table_versions(self) -> tuple[int, int]:
        """The (chunks, embeddings) Delta versions this store reads."""
        return self._chunks.version(), self._vectors.version()

    @property
    def vector_columns(self) -> frozenset[str]:
        """The embeddings table's columns, at this store's version."""
        return frozenset(field.name for field in self._vectors.schema().fields)

    @property
    def filters_access(self) -> bool:
        """Whether the index has its access tags as columns, to filter on in the scan.

        An index written before they existed has none: access can only be checked after
        the search. The next ``groundlock index`` run rewrites it with them.
        """
        return TAGS_MARKER in self.vector_columns

    def missing_tags(self, policy: AccessPolicy) -> list[str]:
        """The access policy's tags that no row of this index carries (every row denied)."""
        return missing_tags(policy, self.vector_columns)

    def chunk_rows(self, sql: str) -> list[dict[str, Any]]:
        """Rows of ``sql`` over the chunks table (registered as ``t``), at this store's version.

        How the index is listed (:mod:`groundlock.lakehouse.listing`). A data file that
        cannot be read raises :class:`~groundlock.stores.readers.TrailDamaged`, naming the
        table and the file.
        """
        return read_rows(self._chunks, sql, table_label(CHUNKS))

    # -- search -----------------------------------------------------------------------------

    @staticmethod
    def where(filter: Mapping[str, Any] | None) -> str:
        """The scan's ``WHERE`` condition for a search filter ('' for none).

        >>> DeltaVectorStore.where({"knowledge_type": ["A", "B"], "equipment_id": "T'7"})
        "knowledge_type IN ('A', 'B') AND equipment_id = 'T''7'"
        """
        conditions = []
        for column, wanted in (filter or {}).items():
            if column not in FILTER_COLUMNS:
                raise ValueError(
                    f"cannot filter on {column!r}; filterable: {', '.join(FILTER_COLUMNS)}"
                )
            if isinstance(wanted, str):
                conditions.append(f"{column} = {quote(wanted)}")
            elif isinstance(wanted, Iterable) and not isinstance(wanted, Mapping):
                values = [str(v) for v in wanted]
                if not values:
                    return "FALSE"
                conditions.append(f"{column} IN ({', '.join(quote(v) for v in values)})")
            else:
                raise TypeError(f"filter {column!r}: a string or a list of strings")
        return " AND ".join(conditions)

    def scan_sql(
        self, filter: Mapping[str, Any] | None = None, access: AccessScan | None = None
    ) -> str:
        """The query :meth:`top_k` runs over the embeddings table (registered as ``t``).

        Raises:
            ValueError: ``access`` on an index without access-tag columns.
        """
        conditions = [self.where(filter)]
        if access is not None:
            columns = self.vector_columns
            if TAGS_MARKER not in columns:
                raise ValueError(
                    "this index has no access-tag columns (written before they existed): "
                    "check access after the search, or re-index it"
                )
            conditions.append(access_condition(access, columns))
        condition = " AND ".join(f"({c})" for c in conditions if c)
        sql = "SELECT chunk_id, content_sha256, embedding FROM t"
        return f"{sql} WHERE {condition}" if condition else sql

    def top_k(
        self,
        vector: Sequence[float],
        k: int,
        filter: Mapping[str, Any] | None = None,
        access: AccessScan | None = None,
    ) -> list[tuple[str, str, float]]:
        """(chunk_id, content_sha256, cosine) of the ``k`` best rows, best first.

        Ties are broken by chunk id, so the order is the same however the table is split
        into files and batches. A data file that cannot be read raises
        :class:`~groundlock.stores.readers.TrailDamaged`, naming the table and the file.
        """
        if k < 1:
            return []
        query = np.asarray(vector, dtype=np.float64)
        query32 = query.astype(np.float32)
        query_norm = float(np.linalg.norm(query))
        sql = self.scan_sql(filter, access)
        best_scores = np.empty(0, dtype=np.float64)
        best_ids: list[tuple[str, str]] = []
        for batch in query_batches(self._vectors, sql, table_label(EMBEDDINGS)):
            if batch.num_rows == 0:
                continue
            matrix = _matrix(batch, query.size)
            # A float32 pass picks the candidates, with a margin far above float32's error;
            # only they are scored exactly in float64, so the result is the exact top-k.
            rough = _rough_cosines(matrix, query32, query_norm)
            floor = rough[_best(rough, k)].min() if rough.size > k else -np.inf
            if len(best_ids) >= k:  # only what can still enter the running top-k
                floor = max(floor, best_scores.min())
            keep = np.flatnonzero(rough >= floor - _MARGIN)
            if keep.size == 0:
                continue
            scores = _cosines(matrix[keep], query, query_norm)
            picked = batch.take(Array.from_numpy(keep.astype(np.uint64)))
            ids = picked.column("chunk_id").to_pylist()
            hashes = picked.column("content_sha256").to_pylist()
            best_scores = np.concatenate([best_scores, scores])
            best_ids.extend((str(i), str(h)) for i, h in zip(ids, hashes, strict=True))
            if len(best_ids) > k:
                order = _ranked(best_scores, [c for c, _ in best_ids])[:k]
                best_scores = best_scores[order]
                best_ids = [best_ids[i] for i in order]
        order = _ranked(best_scores, [c for c, _ in best_ids])[:k]
        return [(best_ids[i][0], best_ids[i][1], float(best_scores[i])) for i in order]

    def similarity_search_by_vector_with_score(
        self,
        embedding: Sequence[float],
        k: int = 4,
        filter: Mapping[str, Any] | None = None,
        access: AccessScan | None = None,
    ) -> list[tuple[Document, float]]:
        """The ``k`` chunks nearest ``embedding`` by cosine, with their cosines."""
        hits = self.top_k(embedding, k, filter, access)
        if not hits:
            return []
        listed = ", ".join(quote(chunk_id) for chunk_id, _, _ in hits)
        rows = {
            str(row["chunk_id"]): row
            for row in read_rows(
                self._chunks,
                f"SELECT * FROM t WHERE chunk_id IN ({listed})",  # noqa: S608  (quoted ids)
                table_label(CHUNKS),
            )
        }
        found: list[tuple[Document, float]] = []
        for chunk_id, digest, score in hits:
            row = rows.get(chunk_id)
            if row is None or row["content_sha256"] != digest:
                continue  # a re-index in flight: the vector's chunk is gone or replaced
            found.append((_document(row), score))
        return found

    @override
    def similarity_search_with_score(
        self,
        query: str,
        k: int = 4,
        filter: Mapping[str, Any] | None = None,
        access: AccessScan | None = None,
        **kwargs: Any,
    ) -> list[tuple[Document, float]]:
        """The ``k`` chunks nearest the question by cosine (raw cosines, in [-1, 1])."""
        return self.similarity_search_by_vector_with_score(
            self.embedding.embed_query(query), k, filter, access
        )

    @override
    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return [doc for doc, _ in self.similarity_search_with_score(query, k, **kwargs)]

    @override
    def similarity_search_by_vector(
        self, embedding: list[float], k: int = 4, **kwargs: Any
    ) -> list[Document]:
        return [
            doc
            for doc, _ in self.similarity_search_by_vector_with_score(
                embedding, k, kwargs.get("filter"), kwargs.get("access")
            )
        ]

    @override
    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        raise NotImplementedError(
            "DeltaVectorStore is read-only; write the index with groundlock.index_documents"
        )

    @classmethod
    @override
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> DeltaVectorStore:
        raise NotImplementedError(
            "DeltaVectorStore is read-only; index documents with groundlock.index_documents"
        )


_MARGIN = 1e-3
"""How far below the k-th rough (float32) cosine a row is still rescored exactly; float32
cosines of unit-scale vectors err by about 1e-6 for thousands of dimensions."""


def _matrix(batch: RecordBatch, dimension: int) -> np.ndarray:
    """The batch's vectors as a (rows, dimension) float32 matrix, without copying."""
    flat = list_flatten(batch.column("embedding")).to_numpy()
    rows = batch.num_rows
    if flat.size != rows * dimension:
        raise ValueError(f"the index's vectors do not have the question's dimension {dimension}")
    return np.asarray(flat, dtype=np.float32).reshape(rows, dimension)


def _rough_cosines(matrix: np.ndarray, query: np.ndarray, query_norm: float) -> np.ndarray:
    """Cosines in float32: fast, and only used to pick the rows scored exactly."""
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix)) * np.float32(query_norm)
    dots = matrix @ query
    return np.where(norms > 0, dots / np.where(norms > 0, norms, 1.0), 0.0)


def _cosines(rows: np.ndarray, query: np.ndarray, query_norm: float) -> np.ndarray:
    """Each row's exact cosine with the query in float64 (0 for a zero vector)."""
    matrix = rows.astype(np.float64)
    norms = np.linalg.norm(matrix, axis=1) * query_norm
    dots = matrix @ query
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(norms > 0, dots / np.where(norms > 0, norms, 1.0), 0.0)


def _best(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` highest scores, ties at the cut included (unordered)."""
    if scores.size <= k:
        return np.arange(scores.size)
    threshold = np.partition(scores, scores.size - k)[scores.size - k]
    return np.flatnonzero(scores >= threshold)


def _ranked(scores: np.ndarray, ids: list[str]) -> list[int]:
    """Positions by descending score, then ascending id."""
    return sorted(range(len(ids)), key=lambda i: (-scores[i], ids[i]))


def _document(row: Mapping[str, Any]) -> Document:
    metadata = {k: v for k, v in row.items() if k not in _METADATA_SKIP and v is not None}
    metadata |= {k: v for k, v in access_tags(row).items() if k not in metadata}
    metadata["knowledge_type_effective"] = row["knowledge_type"]
    return Document(id=str(row["chunk_id"]), page_content=str(row["chunk_text"]), metadata=metadata)


def access_tags(row: Mapping[str, Any]) -> dict[str, Any]:
    """The chunk's access tags, as the indexer stored them: a JSON object of text or lists.

    Anything else was not written by the indexer, and the tags are what access control
    checks: the row is named as damaged (the request fails closed) rather than served
    with tags read some other way, or none.
    """
    raw = row.get("access_tags")
    try:
        tags = json.loads(raw) if isinstance(raw, str) else None
    except (ValueError, RecursionError):
        tags = None
    if isinstance(tags, dict) and all(map(_is_tag, tags.values())):
        return tags
    chunk = repr(row.get("chunk_id"))
    chunk = chunk if len(chunk) <= _SHOWN else chunk[: _SHOWN - 1] + "…"
    raise TrailDamaged(
        f"{table_label(CHUNKS)} holds a row that breaks its schema (chunk {chunk}): "
        "access_tags: not a JSON object of text or lists of text"
    )


_SHOWN = 80


def _is_tag(value: object) -> bool:
    return isinstance(value, str) or (
        isinstance(value, list) and all(isinstance(item, str) for item in value)
    )
