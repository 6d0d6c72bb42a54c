"""Documents into chunks: Markdown and text, and PDF by page (when pypdf is there).

Two chunkers: by characters (a chunk per paragraph, the default) and by tokens (see
:mod:`groundlock.lakehouse.token_chunking`: 003's sizes, cut at paragraph and sentence
ends, with overlap); :func:`chunk_document` says how each names its chunks.

A document may open with a YAML front-matter block (``---`` lines). Its citation keys
(:data:`CITATION_KEYS`) become the chunks' citation metadata; every other key is an access
tag (``business_unit``, ``sensitivity_level``, ...), which the retrieval front checks
against the requesting principal. A key the indexer sets itself (:data:`RESERVED_KEYS`:
``page``, ``document_id``, ``faiss_id``, ...) is refused: as a tag it would fill the row
field of that name at answer time. A document without front matter is still indexed: its
``knowledge_id`` is its file stem, its ``knowledge_type`` the indexer's default (see
:func:`read_document`) and it carries no tags (so under an access policy no one sees it,
which is the safe default for an untagged file). A PDF has no front matter: its metadata
is a YAML file beside it, named after it (``manual.pdf.yaml``), with the same keys; that
file's bytes enter the document's hash.

Reading is bounded, because the files are not ours: a document's text is at most
``max_bytes`` (:data:`MAX_DOCUMENT_BYTES` by default), a PDF file at most
:data:`PDF_FILE_RATIO` times that (checked before pypdf reads it), front matter at most
:data:`MAX_FRONT_MATTER_BYTES`, nested at most :data:`MAX_FRONT_MATTER_DEPTH` deep and
without YAML anchors or aliases (a 1 kB alias bomb expands to gigabytes), and the chunker
is linear in the text. Every refusal is a :class:`DocumentRefused` naming the file.

The document hash covers the file's bytes and the chunking settings, so re-indexing skips
an unchanged document and re-chunks one whose settings changed.

Every chunk's row carries what each citation preset cites by (:func:`chunk_document`): a
``page`` (a Markdown or text file is one page, page 1), a ``semantic_id`` and a
``citation_label``, so one index answers under every preset. :data:`ROWS_VERSION` enters
the hash, so an index written before a change to what a row holds is rewritten once.
"""

from __future__ import annotations

import hashlib
import importlib
import io
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

from groundlock.lakehouse.token_chunking import (
    PARAGRAPH_BREAK,
    CharChunking,
    Chunking,
    TokenChunking,
    token_pieces,
)
from groundlock.text.tokens import TokenCounter

__all__ = [
    "CITATION_KEYS",
    "MAX_DOCUMENT_BYTES",
    "MAX_FRONT_MATTER_BYTES",
    "MAX_FRONT_MATTER_DEPTH",
    "PDF_FILE_RATIO",
    "RESERVED_KEYS",
    "ROWS_VERSION",
    "SUFFIXES",
    "Chunk",
    "DocumentRefused",
    "SourceDocument",
    "chunk_document",
    "discover",
    "read_document",
]

CITATION_KEYS = frozenset(
    {
        "knowledge_id",
        "knowledge_type",
        "title",
        "equipment_id",
        "event_date",
        "semantic_id",
        "citation_label",
    }
)
"""Front-matter keys that describe the document; any other key is an access tag."""

RESERVED_KEYS = frozenset(
    {
        # Row fields R2 reads (and ``similarity``, the alias of ``similarity_score``) ...
        "chunk_id",
        "rank",
        "similarity",
        "similarity_score",
        "rerank_score",
        "chunk_text",
        "knowledge_type_effective",
        "source_reference",
        "faiss_id",
        "document_id",
        "source_file",
        "page",
        # ... and the other columns of the chunks and embeddings tables.
        "content_sha256",
        "document_sha256",
        "access_tags",
        "index_version",
        "embedding",
        "embedding_model",
        "embedding_dim",
        "indexed_ts",
        "index_status",
    }
)
"""Front-matter keys the indexer sets itself; a document that sets one is refused.

An access tag lands in the retrieved document's metadata, where the retrieval front maps
row fields by name: a ``page: 12`` or ``faiss_id: x`` tag became the row's page or vector
id, and a value the row contract refuses failed every question that retrieved the chunk.
"""

SUFFIXES = (".md", ".markdown", ".txt", ".pdf")
"""What :func:`discover` picks up in a folder."""

MAX_DOCUMENT_BYTES = 16 * 1024 * 1024
"""Default ceiling on one document's text (UTF-8 bytes; a PDF's extracted text): 16 MiB.

A whole technical manual is a few MB of text; a larger file is more likely a dump or a
mistake, and its chunks and vectors would sit in memory at once while it is indexed.
"""
PDF_FILE_RATIO = 8
"""How many times ``max_bytes`` (the limit on a document's text) a PDF file may be: 128 MiB
by default. pypdf reads a whole file into memory before it gives the first page's text, so
the file is bounded, by its size on disk, before it is read: fonts and images make a PDF
larger than its text, but a file far larger is more likely a scan or a mistake."""
ROWS_VERSION = 3
"""What a chunk's row holds; part of every document's hash (see :func:`chunk_document`).

3: the embeddings table carries the access tags as columns, so that a search filters on
them in the scan (:mod:`groundlock.lakehouse.tag_columns`); an index written before is
rewritten whole by its next run, never left with tag columns on some rows only.

2: an unpaged document is page 1, and a chunk without a front-matter ``semantic_id`` or
``citation_label`` gets one made from its document (version 1 left them empty, so the
``[Source: file, p.N]``, ``[semantic_id]`` and ``[CIT-NN]`` presets refused its rows).
"""
MAX_FRONT_MATTER_BYTES = 64 * 1024
"""Ceiling on a front-matter block or a PDF's metadata file: real ones are under 1 kB."""
MAX_FRONT_MATTER_DEPTH = 16
"""Deepest nesting of lists and mappings front matter may have (tags are flat or lists)."""

_FRONT_MATTER = re.compile(r"\A---\r?\n(.*?)\r?\n---\r?\n", re.DOTALL)
_NOT_IN_A_MARKER = re.compile(r"[^A-Za-z0-9_.:/\-]+")
"""What a ``[semantic_id]`` marker cannot hold (spaces, brackets, commas, ...)."""
_SURROGATE = re.compile("[\ud800-\udfff]")
_ID_HEX = 12
"""Hex digits of a chunk text's sha256 in a token chunk's id: 48 bits, so two texts of a
page of a thousand chunks share them with odds of about one in 500 million (and then
the second is told apart by ``-2``, as a repeated text is)."""


class DocumentRefused(ValueError):  # noqa: N818  (reads as the verdict it reports)
    """A document the indexer will not index, and why: the message names the file first.

    ``str(error)`` is one line, ``<file>: <field>: <problem>`` (or ``<file>: <problem>``):
    what the command line prints, and what ``index_documents(skip_invalid=True)`` reports.
    """

    def __init__(self, source_file: str, problem: str, field: str | None = None) -> None:
        self.source_file = source_file
        """The document's path under the indexed folder (or a PDF's metadata file)."""
        self.field = field
        """The front-matter key or row field at fault, when there is one."""
        self.problem = problem
        where = f"{source_file}: {field}" if field else source_file
        super().__init__(" ".join(f"{where}: {problem}".split()))


class _FrontMatterLoader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML is untyped
    """YAML's safe loader without anchors or aliases, and with a nesting limit.

    An alias is a reference: nine lists of nine aliases each are a few hundred bytes that
    expand to 9**9 strings when the value is copied or printed. Front matter has no use for
    references, so the first anchor or alias is an error; the depth limit keeps the
    composer's recursion far from Python's stack limit.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:  # noqa: ANN401  (PyYAML nodes)
        """A node as YAML composes it, refusing references and deep nesting first."""
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise yaml.composer.ComposerError(
                None, None, "anchors and aliases are not allowed", event.start_mark
            )
        if self._depth >= MAX_FRONT_MATTER_DEPTH:
            raise yaml.composer.ComposerError(
                None, None, f"nested deeper than {MAX_FRONT_MATTER_DEPTH}", event.start_mark
            )
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


@dataclass(frozen=True)
class SourceDocument:
    """One document as read: its pages of text, its metadata and its content hash."""

    document_id: str
    source_file: str
    pages: tuple[tuple[int | None, str], ...]
    """(page number or None, text): one entry for a text file, one per page of a PDF."""
    metadata: dict[str, Any] = field(default_factory=dict)
    access_tags: dict[str, str | list[str]] = field(default_factory=dict)
    content_sha256: str = ""
    typed_by_default: bool = False
    """Whether ``knowledge_type`` is the indexer's default (the document names none)."""


@dataclass(frozen=True)
class Chunk:
    """One indexed unit: its text, its citation metadata and its access tags."""

    chunk_id: str
    content_sha256: str
    """Hash of the chunk's text."""
    document_id: str
    document_sha256: str
    source_file: str
    page: int | None
    citation_label: str | None
    knowledge_id: str
    knowledge_type: str
    semantic_id: str | None
    source_reference: str
    equipment_id: str | None
    event_date: str | None
    access_tags: dict[str, str | list[str]]
    chunk_text: str

    @property
    def access_tags_json(self) -> str:
        """The tags as stored: a JSON object with sorted keys (stable, diffable)."""
        return json.dumps(self.access_tags, sort_keys=True, ensure_ascii=False)


def discover(root: Path) -> list[Path]:
    """Every indexable file under ``root`` (or ``root`` itself), in a stable order."""
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)


def _pdf_pages(raw: bytes, relative: str, max_bytes: int) -> tuple[tuple[int | None, str], ...]:
    try:  # the optional extra groundlock[pdf]; imported by name, it may well be absent
        pypdf: Any = importlib.import_module("pypdf")
    except ImportError:
        raise DocumentRefused(
            relative, "reading PDF needs pypdf (pip install 'groundlock[pdf]')"
        ) from None
    pages: list[tuple[int | None, str]] = []
    size = 0
    try:
        reader = pypdf.PdfReader(io.BytesIO(raw))
        for number, page in enumerate(reader.pages, 1):
            text = page.extract_text() or ""
            size += len(text.encode("utf-8", "replace"))
            if size > max_bytes:
                break
            pages.append((number, text))
    except Exception as exc:  # noqa: BLE001  (pypdf raises many kinds on a damaged file)
        raise DocumentRefused(relative, f"not a readable PDF ({type(exc).__name__})") from None
    for page_number, text in pages:
        if _SURROGATE.search(text):  # a chunk of it could be neither hashed nor stored
            raise DocumentRefused(relative, f"page {page_number}: text that is not valid Unicode")
    if size > max_bytes:
        raise DocumentRefused(relative, _too_large("its text", max_bytes))
    return tuple(pages)


def _too_large(what: str, limit: int) -> str:
    return f"{what} is larger than the limit of {limit:,} bytes"


def _front_matter(source: str, relative: str) -> dict[str, Any]:
    """The YAML mapping ``source`` holds, its null values dropped, reserved keys refused."""
    if len(source) > MAX_FRONT_MATTER_BYTES or (
        len(source.encode("utf-8", "surrogatepass")) > MAX_FRONT_MATTER_BYTES
    ):
        raise DocumentRefused(relative, _too_large("the front matter", MAX_FRONT_MATTER_BYTES))
    try:
        loaded = yaml.load(source, Loader=_FrontMatterLoader)  # noqa: S506  (a safe loader)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or type(exc).__name__
        mark = getattr(exc, "problem_mark", None)
        line = f", front-matter line {mark.line + 1}" if mark is not None else ""
        raise DocumentRefused(
            relative, f"the front matter is not valid YAML ({problem}{line})"
        ) from None
    except (ValueError, OverflowError) as exc:  # a date out of range, a 5,000-digit number
        raise DocumentRefused(
            relative, f"the front matter holds a value YAML cannot read ({exc})"
        ) from None
    except RecursionError:
        raise DocumentRefused(relative, "the front matter is nested too deeply") from None
    if not isinstance(loaded, dict):
        raise DocumentRefused(relative, "the front matter is not a mapping")
    meta = {str(k): v for k, v in loaded.items() if v is not None}
    reserved = sorted(meta.keys() & RESERVED_KEYS)
    if reserved:
        raise DocumentRefused(
            relative, "a reserved key: the indexer sets it itself", field=reserved[0]
        )
    return meta


def read_document(
    path: Path,
    root: Path,
    *,
    settings: str = "",
    max_bytes: int = MAX_DOCUMENT_BYTES,
    default_knowledge_type: str | None = None,
) -> SourceDocument:
    """``path`` read, its front matter split off; ``document_id`` is its path under ``root``.

    ``settings`` (the chunker's parameters) enters the hash, so changing them re-indexes.
    A document without a ``knowledge_type`` gets ``default_knowledge_type``, which then
    enters its hash too (a new default re-indexes exactly the documents that use it).

    Raises:
        DocumentRefused: text larger than ``max_bytes``, not UTF-8, front matter that is
            too large, too deep, not YAML, not a mapping or sets a reserved key, or a PDF
            that cannot be read or whose file is larger than :data:`PDF_FILE_RATIO` times
            ``max_bytes`` (refused before it is read).
    """
    relative = path.name if root.is_file() else path.relative_to(root).as_posix()
    meta: dict[str, Any] = {}
    if path.suffix.lower() == ".pdf":
        pdf = _bounded(path, relative, PDF_FILE_RATIO * max_bytes, "the PDF file")
        raw = pdf
        sidecar = path.with_name(path.name + ".yaml")
        if sidecar.is_file():
            side = _bounded(sidecar, f"{relative}.yaml", MAX_FRONT_MATTER_BYTES, "the file")
            raw += b"\0" + side
            meta = _front_matter(_utf8(side, f"{relative}.yaml"), f"{relative}.yaml")
        pages = _pdf_pages(pdf, relative, max_bytes)
    else:
        raw = _bounded(path, relative, max_bytes, "the file")
        # utf-8-sig: an editor's byte order mark must not hide the front matter behind it.
        text = _utf8(raw, relative)
        found = _FRONT_MATTER.match(text)
        if found:
            meta = _front_matter(found.group(1), relative)
            text = text[found.end() :]
        pages = ((None, text),)
    by_default = meta.get("knowledge_type") in {None, ""} and default_knowledge_type is not None
    if by_default:
        meta["knowledge_type"] = default_knowledge_type
        settings += f";default_knowledge_type={default_knowledge_type}"
    digest = hashlib.sha256(raw + b"\0" + settings.encode()).hexdigest()
    tags = {k: _tag(v) for k, v in meta.items() if k not in CITATION_KEYS}
    described = {k: v for k, v in meta.items() if k in CITATION_KEYS}
    return SourceDocument(relative, relative, pages, described, tags, digest, by_default)


def _bounded(path: Path, relative: str, limit: int, what: str) -> bytes:
    """The file's bytes, refused before reading when it is larger than ``limit``.

    Never more than ``limit`` and one byte is read, even from a file that grew since it
    was measured.
    """
    if path.stat().st_size > limit:
        raise DocumentRefused(relative, _too_large(what, limit))
    with path.open("rb") as source:
        raw = source.read(limit + 1)
    if len(raw) > limit:  # it grew since stat
        raise DocumentRefused(relative, _too_large(what, limit))
    return raw


def _utf8(raw: bytes, relative: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentRefused(
            relative, f"not UTF-8 text (an invalid byte at offset {exc.start:,})"
        ) from None


def _pieces(text: str, max_chars: int) -> Iterator[str]:
    """Paragraphs; one longer than ``max_chars`` is cut between words.

    Linear in the text: a long paragraph is walked by position. (Slicing off the rest after
    each cut copied it, quadratic in the paragraph: 8 MB in one paragraph took seconds.)
    """
    for raw in PARAGRAPH_BREAK.split(text):
        paragraph = " ".join(raw.split())  # words joined by single spaces, none at the ends
        start, end = 0, len(paragraph)
        while end - start > max_chars:
            cut = paragraph.rfind(" ", start, start + max_chars)
            cut = cut if cut > start else start + max_chars  # no space: cut inside a word
            yield paragraph[start:cut]
            start = cut + 1 if paragraph[cut] == " " else cut
        if start < end:
            yield paragraph[start:]


def chunk_document(
    document: SourceDocument,
    *,
    max_chars: int = 1200,
    chunking: Chunking | None = None,
    counter: TokenCounter | None = None,
) -> list[Chunk]:
    """The document's chunks, in reading order (per page for a PDF).

    ``chunking`` picks the chunker (by default :class:`CharChunking` of ``max_chars``):

    * by characters, one chunk per paragraph (a longer one cut between words); chunk ids
      are positional, ``<document_id>#<n>`` for paragraph n (``#p<page>.<n>`` on a page of
      a PDF), so a chunk's id says where it came from;
    * by tokens (:class:`~groundlock.lakehouse.token_chunking.TokenChunking`), chunks of
      ``min_tokens`` to ``max_tokens`` in the policy's encoding, cut at paragraph or
      sentence ends, with overlap; chunk ids are made from the chunk's text,
      ``<document_id>#t<hex>`` (``#p<page>.t<hex>``): the first 12 hex digits of its
      sha256, ``-2``, ``-3`` added to a text the page repeats. An id then names one text:
      an edited chunk gets a new id, an unchanged one keeps its own wherever it moves.
      Tokens are counted by ``counter``, the policy's (``policy.token_counter``): the
      counter is the policy's part, resolved once when the policy is, never looked up here
      by the encoding's name.

    Either way re-indexing an unchanged document gives the same ids. Each row also carries
    what every citation preset cites by:

    * ``page``: a PDF page's number; a Markdown or text file is one page, page 1 (its
      chunk ids and source references stay unpaged: ``notes.md#2``, ``title, para. 2``;
      by tokens ``title, part 2``).
    * ``semantic_id``: the front matter's ``semantic_id`` (it names the document's one
      row), else ``<knowledge_id>_<n>`` after the chunk id's ``#``: ``MM-TUG7-HPU-04_2``
      for ``tug7-hpu-maintenance.md#2``, ``MM-HPU-RELIEF_p3.1`` for ``hpu.pdf#p3.1``
      (characters a marker cannot hold become ``_``). A chunk id cannot be a marker:
      ``[semantic_id]`` markers hold no ``#``.
    * ``citation_label``: the front matter's, else the document's title, else its path.
    """
    chunking = chunking or CharChunking(max_chars)
    meta = document.metadata
    stem = Path(document.document_id).stem
    knowledge_id = str(meta.get("knowledge_id") or stem)
    title = str(meta.get("title") or document.source_file)
    semantic_id = _text(meta.get("semantic_id"))
    label = _text(meta.get("citation_label")) or title
    base = _NOT_IN_A_MARKER.sub("_", knowledge_id).lstrip(".:/-")
    by_tokens = isinstance(chunking, TokenChunking)
    part = "part" if by_tokens else "para."
    chunks: list[Chunk] = []
    for page, text in document.pages:
        if isinstance(chunking, TokenChunking):
            if counter is None:
                raise ValueError(
                    f"chunking by tokens in {chunking.encoding} needs a token counter: pass "
                    "counter=policy.token_counter of a policy that counts in that encoding"
                )
            pieces = token_pieces(text, chunking, counter)
        else:
            pieces = list(_pieces(text, chunking.max_chars))
        seen: dict[str, int] = {}
        for number, piece in enumerate(pieces, start=1):
            digest = hashlib.sha256(piece.encode()).hexdigest()
            where = f"p. {page}, {part} {number}" if page is not None else f"{part} {number}"
            name = str(number)
            if by_tokens:
                short = digest[:_ID_HEX]
                seen[short] = seen.get(short, 0) + 1
                name = f"t{short}-{seen[short]}" if seen[short] > 1 else f"t{short}"
            suffix = f"p{page}.{name}" if page is not None else name
            chunks.append(
                Chunk(
                    chunk_id=f"{document.document_id}#{suffix}",
                    content_sha256=digest,
                    document_id=document.document_id,
                    document_sha256=document.content_sha256,
                    source_file=document.source_file,
                    page=1 if page is None else page,
                    citation_label=label,
                    knowledge_id=knowledge_id,
                    # read_document gives an untyped document the indexer's default;
                    # DOCUMENT (read without one) is admitted by no built-in policy.
                    knowledge_type=str(meta.get("knowledge_type") or "DOCUMENT"),
                    semantic_id=semantic_id or f"{base}_{suffix}",
                    source_reference=f"{title}, {where}",
                    equipment_id=_text(meta.get("equipment_id")),
                    event_date=_text(meta.get("event_date")),
                    access_tags=document.access_tags,
                    chunk_text=piece,
                )
            )
    return chunks


def _tag(value: object) -> str | list[str]:
    """An access tag's value: a string, or a list of strings (a row in several units)."""
    if isinstance(value, list | tuple):
        return [str(item) for item in value]
    return str(value)


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def chunk_all(
    documents: Iterable[SourceDocument],
    *,
    max_chars: int = 1200,
    chunking: Chunking | None = None,
    counter: TokenCounter | None = None,
) -> list[Chunk]:
    """Every document's chunks, in order."""
    return [
        chunk
        for document in documents
        for chunk in chunk_document(
            document, max_chars=max_chars, chunking=chunking, counter=counter
        )
    ]
