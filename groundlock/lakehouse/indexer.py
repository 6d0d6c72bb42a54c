"""Writing the index: chunks and their embeddings as two Delta tables under one root.

``<root>/chunks`` holds each chunk's text and citation metadata, ``<root>/embeddings`` its
vector with the columns retrieval filters on, the access tags among them (one column set per
tag: :mod:`groundlock.lakehouse.tag_columns`). Three properties shape the write path:

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
* **Only rows R2 admits.** Every chunk's row is checked at index time against the row
  contract (:class:`~groundlock.contracts.retrieval.RetrievalRow`) and the policy the index
  will be answered under (its ``allowed_knowledge_types`` and its citation grammar): one
  bad row in a bundle fails the whole request, so a document R2 would refuse would fail
  every question that retrieved it. Such a document is refused, naming the file and the
  field; with ``skip_invalid`` it is left out of the index (its old rows removed) and
  reported. Unchanged documents were checked when they were indexed; they are checked
  again when the checks differ from those the last commit recorded (another policy, an
  index written before the checks existed: every run, until one commits), or when the
  grammar keys rows by an id that must be unique across the index (``[semantic_id]``).

Documents no longer in the indexed folder are removed: the index mirrors the folder.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from arro3.core import Array, DataType, Field, Schema, Table, fixed_size_list_array
from pydantic import ValidationError

from groundlock.citations.grammar import CitationGrammar
from groundlock.contracts.retrieval import RetrievalRow
from groundlock.core.access import row_payload
from groundlock.lakehouse.calibration import LEXICAL_POLICY
from groundlock.lakehouse.chunking import (
    MAX_DOCUMENT_BYTES,
    ROWS_VERSION,
    Chunk,
    DocumentRefused,
    SourceDocument,
    chunk_document,
    discover,
    read_document,
)
from groundlock.lakehouse.embeddings import LEXICAL_EMBEDDING_PREFIX, LexicalEmbeddings
from groundlock.lakehouse.tag_columns import quote, tag_arrays
from groundlock.lakehouse.token_chunking import (
    CharChunking,
    Chunking,
    TokenChunking,
    chunking_from_record,
)
from groundlock.policies import Policy, load_policy
from groundlock.policies.loader import DEFAULT_POLICY
from groundlock.stores.location import delta_location
from groundlock.stores.readers import query_dicts
from groundlock.text.tokens import TokenCounter

if TYPE_CHECKING:
    from deltalake import DeltaTable
    from langchain_core.embeddings import Embeddings

__all__ = [
    "CHECKS_KEY",
    "CHUNKING_KEY",
    "CHUNKS",
    "EMBEDDINGS",
    "FILTER_COLUMNS",
    "LEXICAL_POLICY",
    "IndexReport",
    "embedding_name",
    "index_documents",
    "quote",
    "read_rows",
    "table_label",
]

CHUNKS = "chunks"
EMBEDDINGS = "embeddings"
INDEX_VERSION_KEY = "groundlock.index_version"
"""Commit metadata key under which every index commit records the corpus's index version."""
CHECKS_KEY = "groundlock.index_checks"
"""Commit metadata key of the checks the indexed rows passed (see :func:`index_documents`)."""
CHUNKING_KEY = "groundlock.chunking"
"""Commit metadata key of the chunker and its parameters, as JSON (see :func:`index_documents`):
``{"chunker": "tokens", "min_tokens": 300, "max_tokens": 700, "overlap_tokens": 50,
"encoding": "cl100k_base"}`` or ``{"chunker": "chars", "max_chars": 1200}``."""
_CHECKS_VERSION = 1
"""Raised when the checks change, so that every index is checked again once."""
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
    policy_version: str = ""
    """The policy whose rules every indexed row was checked against."""
    default_knowledge_type: str = ""
    """The knowledge type given to a document whose metadata names none."""
    untyped: tuple[str, ...] = ()
    """Documents indexed with :attr:`default_knowledge_type` (they name no type)."""
    skipped: tuple[tuple[str, str], ...] = ()
    """(file, why) of every document left out (``skip_invalid``), sorted by file."""
    chunking: Chunking = dataclasses.field(default_factory=CharChunking)
    """How the run chunked (what it recorded, and what the next run keeps by default)."""

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


def read_rows(table: DeltaTable, sql: str, label: str = "the index") -> list[dict[str, Any]]:
    """Rows of a query over ``table`` (registered as ``t``), through delta-rs's engine.

    Never pyarrow: it is not a dependency, and it can abort at interpreter exit after a read.
    A data file that is gone or unreadable raises
    :class:`~groundlock.stores.readers.TrailDamaged`, naming ``label`` and the file.
    """
    return query_dicts(table, sql, label)


def table_label(name: str) -> str:
    """How an error names one of the index's tables (``the index's chunks table``)."""
    return f"the index's {name} table"


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
    # The access tags as columns, so that a search filters on them in the scan.
    columns |= tag_arrays([c.access_tags for c in chunks])
    return Table.from_arrays(list(columns.values()), names=list(columns))


def _write(  # noqa: PLR0917  (private; every call site passes all seven in one order)
    uri: str,
    table: DeltaTable | None,
    data: Table | None,
    documents: Sequence[str],
    index_version: str,
    options: dict[str, str] | None,
    recorded: dict[str, str],
) -> None:
    """Replace ``documents``' rows with ``data`` in one commit (or delete them, or create)."""
    from deltalake import CommitProperties, write_deltalake  # noqa: PLC0415

    commit = CommitProperties(custom_metadata={INDEX_VERSION_KEY: index_version, **recorded})
    predicate = f"document_id IN ({', '.join(quote(d) for d in sorted(documents))})"
    if table is None:
        if data is not None and data.num_rows:
            write_deltalake(
                uri, data, mode="append", storage_options=options, commit_properties=commit
            )
    elif data is None or not data.num_rows:
        table.delete(predicate, commit_properties=commit)
    else:
        # "merge": a tag no row had before adds its columns (NULL in the rows already there).
        write_deltalake(
            table,
            data,
            mode="overwrite",
            predicate=predicate,
            schema_mode="merge",
            commit_properties=commit,
        )


def _indexed(table: DeltaTable | None) -> tuple[dict[str, str], set[str]]:
    """document_id -> document hash, and the embedding models, the table records."""
    if table is None:
        return {}, set()
    rows = read_rows(
        table,
        "SELECT DISTINCT document_id, document_sha256, embedding_model FROM t",
        table_label(EMBEDDINGS),
    )
    return (
        {str(r["document_id"]): str(r["document_sha256"]) for r in rows},
        {str(r["embedding_model"]) for r in rows},
    )


def index_documents(
    source: str | Path,
    index: str | Path,
    embedding: Embeddings | None = None,
    *,
    max_chars: int | None = None,
    chunking: Chunking | None = None,
    batch_size: int = 256,
    storage_options: dict[str, str] | None = None,
    policy: Policy | str | None = None,
    default_knowledge_type: str | None = None,
    skip_invalid: bool = False,
    max_document_bytes: int = MAX_DOCUMENT_BYTES,
) -> IndexReport:
    """Index the Markdown, text (and, with pypdf, PDF) files under ``source`` into ``index``.

    ``index`` is a local path or any URI delta-rs opens (``storage_options`` go to it
    unchanged); ``embedding`` any LangChain ``Embeddings``, by default the offline
    :class:`LexicalEmbeddings`. Only new or changed documents are chunked and embedded;
    documents gone from ``source`` are removed from the index.

    Every row is checked against ``policy``, the policy the index will be answered under
    (a name or a :class:`~groundlock.Policy`; by default what ``groundlock ask --index``
    picks: ``R2_POLICY_V4_LEXICAL`` for a lexical index, the library's default otherwise). A
    document without a ``knowledge_type`` is indexed as ``default_knowledge_type`` (by
    default the policy's first allowed type), so that it answers. A document whose text is
    larger than ``max_document_bytes`` is refused, and so is a PDF file larger than
    :data:`~groundlock.lakehouse.chunking.PDF_FILE_RATIO` times that, before it is read.

    Chunking: ``chunking`` (a :class:`~groundlock.lakehouse.token_chunking.TokenChunking`
    or :class:`~groundlock.lakehouse.token_chunking.CharChunking`), or ``max_chars`` for
    characters. With neither, the chunking the index recorded (every commit records it
    under :data:`CHUNKING_KEY`), else characters, at most 1200 a chunk: re-running on an
    index built by tokens keeps its chunks and ids, and an index built before chunking was
    recorded (by characters) is not rewritten. Changing the chunking re-chunks and
    re-embeds every document (the settings are part of each document's hash) and changes
    the chunk ids. Token chunks are counted in the policy's ``token_encoding`` and may be
    at most the policy's per-entry ceiling (``max_chunk_tokens``: 770 for every built-in
    policy), so that none reaches the model truncated.

    Raises:
        DocumentRefused: a document R2 would refuse, or one that cannot be read (unless
            ``skip_invalid``: then it is left out and listed in the report's ``skipped``).
        ValueError: settings the policy refuses, or an index of another embedding model.
    """
    started = time.perf_counter()
    embedding = embedding or LexicalEmbeddings()
    model = embedding_name(embedding)
    root = Path(source)
    if not root.exists():
        raise ValueError(f"no such file or folder: {root}")
    # A location no table can have is refused before any document is read.
    chunks_uri, vectors_uri = _table_uri(index, CHUNKS), _table_uri(index, EMBEDDINGS)
    target = _target_policy(policy, model)
    default_type = _default_type(target, default_knowledge_type)
    chunk_table = _open(chunks_uri, storage_options)
    vector_table = _open(vectors_uri, storage_options)
    chunking = _chunking(chunking, max_chars, vector_table)
    _check_settings(target, chunking, max_document_bytes)
    settings = f"{chunking.settings};rows={ROWS_VERSION}"
    documents, refused = _read_all(root, settings, max_document_bytes, default_type)
    known, models = _indexed(vector_table)
    if models - {model}:
        raise ValueError(
            f"the index holds vectors of {', '.join(sorted(models))}, not {model}; vectors of "
            "different models cannot be compared: index into a new location"
        )
    checks = _RowChecks(target)
    recheck = _recorded_checks(vector_table) != checks.signature
    stale = [d for d in documents if recheck or known.get(d.document_id) != d.content_sha256]
    chunked, unfit = _check_all(stale, checks, chunking, target.token_counter)
    if checks.keyed and len(stale) < len(documents):
        # A grammar keyed by a unique id needs every row's id, the unchanged ones' too.
        checks = _RowChecks(target)
        chunked, unfit = _check_all(documents, checks, chunking, target.token_counter)
    refused += unfit
    if refused and not skip_invalid:
        first = min(refused, key=lambda exc: exc.source_file)
        more = f" (and {len(refused) - 1} more document(s) refused)" if len(refused) > 1 else ""
        raise DocumentRefused(first.source_file, f"{first.problem}{more}", first.field)
    refused_ids = {exc.source_file for exc in refused}
    documents = [d for d in documents if d.document_id not in refused_ids]
    corpus = sorted((d.document_id, d.content_sha256) for d in documents)
    index_version = "lh-" + hashlib.sha256(repr((model, corpus)).encode()).hexdigest()[:16]
    # A document without text has no rows, so the index cannot record it: it is changed
    # only when it had rows to remove (it used to count as changed on every run).
    changed = [
        d
        for d in documents
        if known.get(d.document_id) != d.content_sha256
        and (chunked[d.document_id] or d.document_id in known)
    ]
    removed = sorted(set(known) - {d.document_id for d in documents})
    chunks = [c for d in changed for c in chunked[d.document_id]]
    if changed or removed:
        vectors = _embed(embedding, [c.chunk_text for c in chunks], batch_size)
        touched = [d.document_id for d in changed] + removed
        data = _chunk_table(chunks, index_version) if chunks else None
        embedded = _embedding_table(chunks, vectors, model, index_version) if chunks else None
        recorded = {
            CHECKS_KEY: checks.signature,
            CHUNKING_KEY: json.dumps(chunking.record, sort_keys=True),
        }
        # Chunks first, then vectors: a vector is never visible before its chunk row.
        _write(chunks_uri, chunk_table, data, touched, index_version, storage_options, recorded)
        _write(
            vectors_uri, vector_table, embedded, touched, index_version, storage_options, recorded
        )
        chunk_table = _open(chunks_uri, storage_options)
        vector_table = _open(vectors_uri, storage_options)
    return IndexReport(
        index_version=index_version,
        embedding_model=model,
        documents=len(documents) + len(refused),
        changed=tuple(d.document_id for d in changed),
        removed=tuple(removed),
        chunks_written=len(chunks),
        seconds=time.perf_counter() - started,
        chunks_version=None if chunk_table is None else chunk_table.version(),
        embeddings_version=None if vector_table is None else vector_table.version(),
        policy_version=target.policy_version,
        default_knowledge_type=default_type,
        untyped=tuple(d.document_id for d in documents if d.typed_by_default),
        skipped=tuple(sorted((exc.source_file, str(exc)) for exc in refused)),
        chunking=chunking,
    )


def _chunking(
    chunking: Chunking | None, max_chars: int | None, table: DeltaTable | None
) -> Chunking:
    """The chunking asked for, else the one the index recorded, else characters."""
    if chunking is not None and max_chars is not None:
        raise ValueError("pass chunking or max_chars, not both")
    if chunking is not None:
        return chunking
    if max_chars is not None:
        return CharChunking(max_chars)
    return _recorded_chunking(table) or CharChunking()


def _recorded_chunking(table: DeltaTable | None) -> Chunking | None:
    """The chunking the table's last commit recorded (None: none, or no table)."""
    if table is None:
        return None
    last = table.history(1)
    value = last[0].get(CHUNKING_KEY) if last else None
    return chunking_from_record(value if isinstance(value, str) else None)


def _check_settings(policy: Policy, chunking: Chunking, max_document_bytes: int) -> None:
    if isinstance(chunking, TokenChunking):
        if chunking.encoding != policy.token_encoding:
            raise ValueError(
                f"token chunks counted in {chunking.encoding} would be sized in another "
                f"encoding than policy {policy.policy_version} counts evidence in "
                f"({policy.token_encoding}): pass TokenChunking(encoding="
                f"{policy.token_encoding!r})"
            )
        if chunking.max_tokens > policy.max_chunk_tokens:
            raise ValueError(
                f"chunks of up to {chunking.max_tokens} tokens: policy "
                f"{policy.policy_version} admits an evidence entry of at most "
                f"{policy.max_chunk_tokens} tokens, its header included, and would truncate "
                "longer chunks"
            )
    else:
        limit = policy.input_limits.max_chunk_chars
        if not 1 <= chunking.max_chars <= limit:
            raise ValueError(
                f"max_chars {chunking.max_chars} is outside 1 to {limit:,}, the longest "
                f"chunk policy {policy.policy_version} admits"
            )
    if max_document_bytes < 1:
        raise ValueError("max_document_bytes must be at least 1")


def _read_all(
    root: Path, settings: str, max_bytes: int, default_type: str
) -> tuple[list[SourceDocument], list[DocumentRefused]]:
    """Every document under ``root`` that can be read, and the refusals of the others."""
    documents: list[SourceDocument] = []
    refused: list[DocumentRefused] = []
    for path in discover(root):
        try:
            document = read_document(
                path,
                root,
                settings=settings,
                max_bytes=max_bytes,
                default_knowledge_type=default_type,
            )
        except DocumentRefused as exc:
            refused.append(exc)
        else:
            documents.append(document)
    ids = [d.document_id for d in documents]
    if len(set(ids)) != len(ids):
        raise ValueError("two documents share one document_id")
    return documents, refused


def _check_all(
    documents: Sequence[SourceDocument],
    checks: _RowChecks,
    chunking: Chunking,
    counter: TokenCounter,
) -> tuple[dict[str, list[Chunk]], list[DocumentRefused]]:
    """The chunks of every document whose rows pass, and the refusals of the others."""
    chunked: dict[str, list[Chunk]] = {}
    refused: list[DocumentRefused] = []
    for document in documents:
        chunks = chunk_document(document, chunking=chunking, counter=counter)
        try:
            checks.check(document, chunks)
        except DocumentRefused as exc:
            refused.append(exc)
        else:
            chunked[document.document_id] = chunks
    return chunked, refused


def _target_policy(policy: Policy | str | None, model: str) -> Policy:
    """The policy the index will be answered under (``ask --index`` picks it the same way)."""
    if isinstance(policy, Policy):
        return policy
    if policy is None:
        lexical = model.startswith(LEXICAL_EMBEDDING_PREFIX)
        policy = LEXICAL_POLICY if lexical else DEFAULT_POLICY
    return load_policy(policy)


def _default_type(policy: Policy, wanted: str | None) -> str:
    allowed = policy.allowed_knowledge_types
    if wanted is None:
        return allowed[0]
    if wanted not in allowed:
        raise ValueError(
            f"default knowledge type {_shown(wanted)} is not one of the allowed_knowledge_types "
            f"of policy {policy.policy_version} ({', '.join(allowed)})"
        )
    return wanted


def _recorded_checks(table: DeltaTable | None) -> str | None:
    """The checks signature the table's last commit recorded (None: none, or no table)."""
    if table is None:
        return None
    last = table.history(1)
    value = last[0].get(CHECKS_KEY) if last else None
    return value if isinstance(value, str) else None


_ORIGIN = {
    "chunk_id": "the file's path under the folder",
    "document_id": "the file's path under the folder",
    "source_file": "the file's path under the folder",
    "knowledge_id": "knowledge_id, else the file's name",
    "source_reference": "title, else the file's path",
    "semantic_id": "semantic_id, else knowledge_id (else the file's name) and the chunk's number",
    "citation_label": "citation_label, else title, else the file's path",
}
"""Where a row field's value came from, when it is not the front-matter key of its name."""
_FRONT_MATTER_KEY = {"knowledge_type_effective": "knowledge_type"}
_METADATA_COLUMNS = tuple(
    name
    for name in CHUNK_SCHEMA.names
    if name not in {"chunk_text", "access_tags", "index_version"}
)
"""The chunk columns DeltaVectorStore returns as metadata (``index_version`` is the run's)."""
_SHOWN = 60


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


class _RowChecks:
    """R2's row rules at index time: the row contract, the policy's types and grammar."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.grammar: CitationGrammar = policy.grammar
        self.signature = hashlib.sha256(
            repr((_CHECKS_VERSION, policy.allowed_knowledge_types, self.grammar.name)).encode()
        ).hexdigest()[:16]
        """What the checks depend on; an index records it with every commit."""
        self.keyed = False
        """Whether the grammar keys rows by an id that must be unique across the index."""
        self._keys: dict[str, str] = {}

    def check(self, document: SourceDocument, chunks: Sequence[Chunk]) -> None:
        """Raise :class:`DocumentRefused` at the first row of ``document`` R2 would refuse.

        The document's rows are all checked before any of its keys is kept, so a refused
        document leaves no key behind to refuse another.
        """
        keys: dict[str, str] = {}
        for chunk in chunks:
            row = self._row(document, chunk)
            key = self.grammar.unique_key(row)
            if key is None:
                continue
            self.keyed = True
            other = self._keys.get(key) or keys.get(key)
            if other is not None:
                field = "semantic_id" if row.semantic_id is not None else "chunk_id"
                raise DocumentRefused(
                    document.source_file,
                    f"{_shown(key)} also cites {other}; a {self.grammar.shape} marker must "
                    f"name one row under policy {self.policy.policy_version}"
                    + _duplicate_hint(document, chunk, other),
                    field,
                )
            keys[key] = chunk.chunk_id
        self._keys.update(keys)

    def _row(self, document: SourceDocument, chunk: Chunk) -> RetrievalRow:
        # The metadata DeltaVectorStore returns for the stored row, mapped as the front maps it.
        metadata: dict[str, Any] = {
            name: value for name in _METADATA_COLUMNS if (value := getattr(chunk, name)) is not None
        }
        metadata |= {k: v for k, v in chunk.access_tags.items() if k not in metadata}
        metadata["knowledge_type_effective"] = chunk.knowledge_type
        payload = row_payload(
            rank=0,
            similarity=1.0,
            text=chunk.chunk_text,
            document_id=chunk.chunk_id,
            metadata=metadata,
            fields={},
        )
        try:
            row = RetrievalRow.model_validate(payload)
        except ValidationError as exc:
            error = exc.errors(include_url=False, include_input=False)[0]
            name = str(error["loc"][0]) if error["loc"] else "row"
            origin = _ORIGIN.get(name)
            raise DocumentRefused(
                document.source_file,
                f"{error['msg']}" + (f" (made from {origin})" if origin else ""),
                _FRONT_MATTER_KEY.get(name, name),
            ) from None
        allowed = self.policy.allowed_knowledge_types
        if row.knowledge_type_effective not in allowed:
            raise DocumentRefused(
                document.source_file,
                f"{_shown(row.knowledge_type_effective)} is not one of the "
                f"allowed_knowledge_types of policy {self.policy.policy_version} "
                f"({', '.join(allowed)})",
                "knowledge_type",
            )
        problem = self.grammar.row_problem(row)
        if problem is not None:
            field, _, why = problem.partition(": ")
            raise DocumentRefused(
                document.source_file, f"{why} under policy {self.policy.policy_version}", field
            )
        return row


def _duplicate_hint(document: SourceDocument, chunk: Chunk, other: str) -> str:
    """How to give two rows of one ``[semantic_id]`` two ids."""
    if document.metadata.get("semantic_id") is not None:
        if other.startswith(f"{document.document_id}#"):
            return (
                " (a front-matter semantic_id names a document's one row; without it each "
                "chunk gets <knowledge_id>_<n>)"
            )
        return ""
    return (
        f" (made from knowledge_id {_shown(chunk.knowledge_id)}: give one of the documents "
        "another knowledge_id, or a semantic_id)"
    )


def _embed(embedding: Embeddings, texts: list[str], batch_size: int) -> np.ndarray:
    """All vectors as one float32 matrix; every vector must have the same dimension.

    Each batch becomes float32 at once: a run's vectors kept as Python lists of floats took
    about eight times the memory of the matrix (32 bytes a float against 4).
    """
    batches: list[np.ndarray] = []
    dimensions: set[int] = set()
    for start in range(0, len(texts), batch_size):
        vectors = embedding.embed_documents(texts[start : start + batch_size])
        dimensions |= {len(v) for v in vectors}
        if len(dimensions) > 1:
            raise ValueError("the embedding returned vectors of different dimensions")
        if vectors:
            batches.append(np.asarray(vectors, dtype=np.float32))
    if not batches:
        return np.zeros((0, 1), dtype=np.float32)
    return np.concatenate(batches)
