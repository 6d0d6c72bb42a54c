"""What an index holds: its chunks (ids, citation fields, text) or its documents, listed.

A gold set for :func:`~groundlock.lakehouse.run_eval` names the chunks a correct answer
cites by their ids, and a ``[semantic_id]`` or ``[CIT-NN]`` answer cites by fields of the
row; both are read here rather than guessed. Chunk ids say where a chunk came from (see
:func:`~groundlock.lakehouse.chunking.chunk_document`):

* ``<document>#<n>``: paragraph ``n`` of a Markdown or text file (``crane-slew-bearing.md#2``);
* ``<document>#p<page>.<n>``: paragraph ``n`` of page ``page`` of a PDF (``manual.pdf#p3.1``),

where ``<document>`` is the file's path under the indexed folder.

Chunks are listed in reading order (by document, page, then paragraph: ``#2`` before
``#10``), documents by id. A listing is read from the chunks table through delta-rs's query
engine with the limit pushed into the query, so listing the first rows of a large index
reads no more than they need; it says how many rows matched, so a listing that holds fewer
can say it was cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from groundlock.lakehouse.embeddings import LexicalEmbeddings
from groundlock.lakehouse.indexer import quote
from groundlock.lakehouse.vectorstore import DeltaVectorStore, access_tags

__all__ = ["IndexListing", "ListedChunk", "ListedDocument", "list_chunks", "list_documents"]

_Item = TypeVar("_Item", "ListedChunk", "ListedDocument")


@dataclass(frozen=True)
class ListedChunk:
    """One chunk's row: its id, where it came from, what each preset cites it by, its text."""

    chunk_id: str
    document_id: str
    source_file: str
    page: int | None
    """The page (a Markdown or text file is page 1; None in an index written before that)."""
    knowledge_id: str
    knowledge_type: str
    semantic_id: str | None
    """What a ``[semantic_id]`` marker names (``MM-TUG7-HPU-04_2``)."""
    citation_label: str | None
    """What a ``[CIT-NN]`` marker maps to."""
    source_reference: str
    equipment_id: str | None
    event_date: str | None
    access_tags: dict[str, str | list[str]]
    chunk_text: str
    content_sha256: str


@dataclass(frozen=True)
class ListedDocument:
    """One document: its chunks counted, its pages, and the fields every chunk shares."""

    document_id: str
    source_file: str
    chunks: int
    first_page: int | None
    last_page: int | None
    knowledge_id: str
    knowledge_type: str
    citation_label: str | None
    equipment_id: str | None
    event_date: str | None
    access_tags: dict[str, str | list[str]]


@dataclass(frozen=True)
class IndexListing(Generic[_Item]):
    """Chunks or documents of an index, and how many matched (the listing may hold fewer)."""

    items: tuple[_Item, ...]
    matched: int
    """How many chunks (or documents) match the filter: more than ``items`` when cut."""
    missing: tuple[str, ...]
    """Documents asked for that the index does not hold."""
    index_version: str
    embedding_model: str | None

    @property
    def cut(self) -> bool:
        """Whether more match than the listing holds (its limit cut it)."""
        return self.matched > len(self.items)


_CHUNK_COLUMNS = (
    "chunk_id", "document_id", "source_file", "page", "knowledge_id", "knowledge_type",
    "semantic_id", "citation_label", "source_reference", "equipment_id", "event_date",
    "access_tags", "chunk_text", "content_sha256",
)  # fmt: skip
# Within one page of one document, source references differ only in the chunk's number
# (``title, para. 2``, by tokens ``title, part 2``; no leading zeros), so the shorter one
# comes first and equal lengths sort as numbers. (Not the chunk id: by tokens it is a hash.)
_READING_ORDER = "document_id, page, character_length(source_reference), source_reference, chunk_id"
_SHARED = ("knowledge_id", "knowledge_type", "citation_label", "equipment_id", "event_date")
"""Columns every chunk of a document shares (they come from its front matter)."""


def list_chunks(
    index: str,
    *,
    documents: Sequence[str] = (),
    limit: int | None = None,
    storage_options: dict[str, str] | None = None,
) -> IndexListing[ListedChunk]:
    """The chunks of the index at ``index`` in reading order, at most ``limit`` of them.

    ``documents`` keeps only the chunks of those documents (ids as listed: the file's path
    under the indexed folder).

    Raises:
        ValueError: no index at ``index``, or a ``limit`` below 1.
        TrailDamaged: a data file of the chunks table is gone or cannot be read.
    """
    store, condition = _open(index, documents, limit, storage_options)
    rows = store.chunk_rows(
        f"SELECT {', '.join(_CHUNK_COLUMNS)} FROM t{condition} "  # noqa: S608  (quoted ids)
        f"ORDER BY {_READING_ORDER}{_limit(limit)}"
    )
    matched = store.chunk_rows(f"SELECT count(*) AS n FROM t{condition}")  # noqa: S608
    items = tuple(
        ListedChunk(
            **{name: row[name] for name in _CHUNK_COLUMNS if name != "access_tags"},
            access_tags=access_tags(row),
        )
        for row in rows
    )
    return _listing(store, items, int(matched[0]["n"]), documents)


def list_documents(
    index: str,
    *,
    documents: Sequence[str] = (),
    limit: int | None = None,
    storage_options: dict[str, str] | None = None,
) -> IndexListing[ListedDocument]:
    """The documents of the index at ``index`` by id, at most ``limit`` of them.

    Raises:
        ValueError: no index at ``index``, or a ``limit`` below 1.
        TrailDamaged: a data file of the chunks table is gone or cannot be read.
    """
    store, condition = _open(index, documents, limit, storage_options)
    shared = ", ".join(f"min({name}) AS {name}" for name in _SHARED)
    rows = store.chunk_rows(
        f"SELECT document_id, min(source_file) AS source_file, count(*) AS chunks, "  # noqa: S608
        f"min(page) AS first_page, max(page) AS last_page, {shared}, "
        f"min(access_tags) AS access_tags, min(chunk_id) AS chunk_id "
        f"FROM t{condition} GROUP BY document_id ORDER BY document_id{_limit(limit)}"
    )
    matched = store.chunk_rows(
        f"SELECT count(DISTINCT document_id) AS n FROM t{condition}"  # noqa: S608
    )
    items = tuple(
        ListedDocument(
            document_id=row["document_id"],
            source_file=row["source_file"],
            chunks=int(row["chunks"]),
            first_page=row["first_page"],
            last_page=row["last_page"],
            **{name: row[name] for name in _SHARED},
            access_tags=access_tags(row),
        )
        for row in rows
    )
    return _listing(store, items, int(matched[0]["n"]), documents)


def _open(
    index: str,
    documents: Sequence[str],
    limit: int | None,
    storage_options: dict[str, str] | None,
) -> tuple[DeltaVectorStore, str]:
    if limit is not None and limit < 1:
        raise ValueError("limit must be at least 1")
    # Listing embeds nothing: the store is opened for its tables, whatever model wrote them.
    store = DeltaVectorStore(
        index, LexicalEmbeddings(), storage_options=storage_options, check_model=False
    )
    condition = (
        f" WHERE document_id IN ({', '.join(quote(d) for d in documents)})" if documents else ""
    )
    return store, condition


def _limit(limit: int | None) -> str:
    return "" if limit is None else f" LIMIT {int(limit)}"


def _listing(
    store: DeltaVectorStore, items: tuple[_Item, ...], matched: int, documents: Sequence[str]
) -> IndexListing[_Item]:
    missing: tuple[str, ...] = ()
    if documents:
        listed = ", ".join(quote(d) for d in documents)
        held = store.chunk_rows(
            f"SELECT DISTINCT document_id FROM t WHERE document_id IN ({listed})"  # noqa: S608
        )
        found = {row["document_id"] for row in held}
        missing = tuple(d for d in dict.fromkeys(documents) if d not in found)
    return IndexListing(
        items=items,
        matched=matched,
        missing=missing,
        index_version=store.index_version,
        embedding_model=store.embedding_model,
    )
