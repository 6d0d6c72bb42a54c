"""Documents into chunks: Markdown and text by paragraph, PDF by page (when pypdf is there).

A document may open with a YAML front-matter block (``---`` lines). Its citation keys
(:data:`CITATION_KEYS`) become the chunks' citation metadata; every other key is an access
tag (``business_unit``, ``sensitivity_level``, ...), which the retrieval front checks
against the requesting principal. A document without front matter is still indexed: its
``knowledge_id`` is its file stem, its ``knowledge_type`` ``DOCUMENT`` and it carries no
tags (so under an access policy no one sees it, which is the safe default for an untagged
file). A PDF has no front matter: its metadata is a YAML file beside it, named after it
(``manual.pdf.yaml``), with the same keys; that file's bytes enter the document's hash.

The document hash covers the file's bytes and the chunking settings, so re-indexing skips
an unchanged document and re-chunks one whose settings changed.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

__all__ = [
    "CITATION_KEYS",
    "SUFFIXES",
    "Chunk",
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

SUFFIXES = (".md", ".markdown", ".txt", ".pdf")
"""What :func:`discover` picks up in a folder."""

_FRONT_MATTER = re.compile(r"\A---\r?\n(.*?)\r?\n---\r?\n", re.DOTALL)
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


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


def _pdf_pages(path: Path) -> tuple[tuple[int | None, str], ...]:
    try:  # the optional extra groundlock[pdf]; imported by name, it may well be absent
        pypdf: Any = importlib.import_module("pypdf")
    except ImportError:
        raise ValueError(
            f"{path.name}: reading PDF needs pypdf (pip install 'groundlock[pdf]')"
        ) from None
    try:
        reader = pypdf.PdfReader(path)
        return tuple(
            (number, page.extract_text() or "") for number, page in enumerate(reader.pages, 1)
        )
    except Exception as exc:  # noqa: BLE001  (pypdf raises many kinds on a damaged file)
        raise ValueError(f"{path.name}: not a readable PDF ({type(exc).__name__})") from None


def _front_matter(source: str, relative: str) -> dict[str, Any]:
    """The YAML mapping ``source`` holds, its null values dropped."""
    try:
        loaded = yaml.safe_load(source)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise ValueError(f"{relative}: the front matter is not valid YAML ({problem})") from None
    if not isinstance(loaded, dict):
        # A fault of the caller's file, reported as every input fault here is.
        raise ValueError(f"{relative}: the front matter is not a mapping")  # noqa: TRY004
    return {str(k): v for k, v in loaded.items() if v is not None}


def read_document(path: Path, root: Path, *, settings: str = "") -> SourceDocument:
    """``path`` read, its front matter split off; ``document_id`` is its path under ``root``.

    ``settings`` (the chunker's parameters) enters the hash, so changing them re-indexes.
    """
    raw = path.read_bytes()
    relative = path.name if root.is_file() else path.relative_to(root).as_posix()
    meta: dict[str, Any] = {}
    if path.suffix.lower() == ".pdf":
        sidecar = path.with_name(path.name + ".yaml")
        if sidecar.is_file():
            side = sidecar.read_bytes()
            raw += b"\0" + side
            meta = _front_matter(side.decode("utf-8"), f"{relative}.yaml")
        pages = _pdf_pages(path)
    else:
        text = raw.decode("utf-8")
        found = _FRONT_MATTER.match(text)
        if found:
            meta = _front_matter(found.group(1), relative)
            text = text[found.end() :]
        pages = ((None, text),)
    digest = hashlib.sha256(raw + b"\0" + settings.encode()).hexdigest()
    tags = {k: _tag(v) for k, v in meta.items() if k not in CITATION_KEYS}
    described = {k: v for k, v in meta.items() if k in CITATION_KEYS}
    return SourceDocument(relative, relative, pages, described, tags, digest)


def _pieces(text: str, max_chars: int) -> Iterator[str]:
    """Paragraphs; one longer than ``max_chars`` is cut between words.

    Linear in the text: a long paragraph is walked by position. (Slicing off the rest after
    each cut copied it, quadratic in the paragraph: 8 MB in one paragraph took seconds.)
    """
    for raw in _PARAGRAPH_BREAK.split(text):
        paragraph = " ".join(raw.split())  # words joined by single spaces, none at the ends
        start, end = 0, len(paragraph)
        while end - start > max_chars:
            cut = paragraph.rfind(" ", start, start + max_chars)
            cut = cut if cut > start else start + max_chars  # no space: cut inside a word
            yield paragraph[start:cut]
            start = cut + 1 if paragraph[cut] == " " else cut
        if start < end:
            yield paragraph[start:]


def chunk_document(document: SourceDocument, *, max_chars: int = 1200) -> list[Chunk]:
    """The document's chunks, numbered from 1 (per page for a PDF).

    Chunk ids are ``<document_id>#<n>`` (``#p<page>.<n>`` for a page), so a chunk's id
    says where it came from and re-indexing an unchanged document gives the same ids.
    """
    meta = document.metadata
    stem = Path(document.document_id).stem
    knowledge_id = str(meta.get("knowledge_id") or stem)
    title = str(meta.get("title") or document.source_file)
    chunks: list[Chunk] = []
    for page, text in document.pages:
        for number, piece in enumerate(_pieces(text, max_chars), start=1):
            where = f"p. {page}, para. {number}" if page is not None else f"para. {number}"
            suffix = f"p{page}.{number}" if page is not None else str(number)
            chunks.append(
                Chunk(
                    chunk_id=f"{document.document_id}#{suffix}",
                    content_sha256=hashlib.sha256(piece.encode()).hexdigest(),
                    document_id=document.document_id,
                    document_sha256=document.content_sha256,
                    source_file=document.source_file,
                    page=page,
                    citation_label=_text(meta.get("citation_label")),
                    knowledge_id=knowledge_id,
                    knowledge_type=str(meta.get("knowledge_type") or "DOCUMENT"),
                    semantic_id=_text(meta.get("semantic_id")),
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


def chunk_all(documents: Iterable[SourceDocument], *, max_chars: int = 1200) -> list[Chunk]:
    """Every document's chunks, in order."""
    return [
        chunk for document in documents for chunk in chunk_document(document, max_chars=max_chars)
    ]
