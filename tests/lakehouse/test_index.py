"""Indexing into Delta: what is written, and that re-indexing writes only what changed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from deltalake import DeltaTable

from groundlock.lakehouse import LexicalEmbeddings, index_documents
from groundlock.lakehouse.indexer import read_rows
from tests.lakehouse.pdf import make_pdf


def _versions(index: Path) -> tuple[int, int]:
    return DeltaTable(index / "chunks").version(), DeltaTable(index / "embeddings").version()


def test_first_index_writes_chunks_with_citations_and_embeddings(corpus: Path, tmp_path: Path):
    index = tmp_path / "idx"
    report = index_documents(corpus, index)
    assert report.documents == 6
    assert report.chunks_written == 16
    assert report.wrote
    assert report.embedding_model == "lexical-hash-2048"
    chunks = read_rows(DeltaTable(index / "chunks"), "SELECT * FROM t ORDER BY chunk_id")
    assert len(chunks) == 16
    slew = next(c for c in chunks if c["chunk_id"] == "crane-slew-bearing.md#2")
    assert slew["knowledge_id"] == "MM-STS2-SLEW-02"
    assert slew["knowledge_type"] == "MAINTENANCE_PROCEDURE"
    assert slew["source_reference"].endswith("para. 2")
    assert json.loads(slew["access_tags"]) == {
        "business_unit": "TERMINAL",
        "sensitivity_level": "INTERNAL",
    }
    assert "1,250 Nm" in slew["chunk_text"]
    vectors = read_rows(
        DeltaTable(index / "embeddings"),
        "SELECT DISTINCT embedding_model, embedding_dim, index_status, index_version FROM t",
    )
    assert vectors == [
        {
            "embedding_model": "lexical-hash-2048",
            "embedding_dim": 2048,
            "index_status": "INDEXED",
            "index_version": report.index_version,
        }
    ]


def test_unchanged_documents_write_nothing(corpus: Path, tmp_path: Path):
    index = tmp_path / "idx"
    first = index_documents(corpus, index)
    before = _versions(index)
    again = index_documents(corpus, index)
    assert not again.wrote
    assert again.chunks_written == 0
    assert again.index_version == first.index_version
    assert _versions(index) == before  # no new Delta version in either table


def test_a_changed_document_replaces_only_its_own_chunks(corpus: Path, tmp_path: Path):
    index = tmp_path / "idx"
    index_documents(corpus, index)
    before = read_rows(DeltaTable(index / "embeddings"), "SELECT chunk_id, indexed_ts FROM t")
    path = corpus / "crane-slew-bearing.md"
    path.write_text(path.read_text() + "\nThe bearing seal is inspected monthly.\n")
    report = index_documents(corpus, index)
    assert report.changed == ("crane-slew-bearing.md",)
    assert report.chunks_written == 3
    assert _versions(index) == (1, 1)  # one commit per table
    after = read_rows(DeltaTable(index / "embeddings"), "SELECT chunk_id, indexed_ts FROM t")
    untouched = {r["chunk_id"]: r["indexed_ts"] for r in before if "crane" not in r["chunk_id"]}
    assert {r["chunk_id"]: r["indexed_ts"] for r in after if "crane" not in r["chunk_id"]} == (
        untouched
    )
    crane = sorted(r["chunk_id"] for r in after if "crane" in r["chunk_id"])
    assert crane == [f"crane-slew-bearing.md#{n}" for n in (1, 2, 3)]
    assert len(after) == 17


def test_a_removed_document_leaves_the_index(corpus: Path, tmp_path: Path):
    index = tmp_path / "idx"
    index_documents(corpus, index)
    (corpus / "draft-pump-upgrade.md").unlink()
    report = index_documents(corpus, index)
    assert report.removed == ("draft-pump-upgrade.md",)
    assert report.chunks_written == 0
    for table in ("chunks", "embeddings"):
        ids = read_rows(DeltaTable(index / table), "SELECT DISTINCT document_id FROM t")
        assert {r["document_id"] for r in ids} == {p.name for p in corpus.glob("*.md")}


def test_another_embedding_model_is_refused(corpus: Path, tmp_path: Path):
    index = tmp_path / "idx"
    index_documents(corpus, index)
    (corpus / "new.md").write_text("A new document.\n")
    with pytest.raises(ValueError, match="cannot be compared"):
        index_documents(corpus, index, LexicalEmbeddings(dimensions=64))


def test_a_document_without_front_matter_is_indexed_untagged(tmp_path: Path):
    source = tmp_path / "notes"
    source.mkdir()
    (source / "plain.txt").write_text("First paragraph.\n\nSecond paragraph.\n")
    index_documents(source, tmp_path / "idx")
    chunks = read_rows(DeltaTable(tmp_path / "idx" / "chunks"), "SELECT * FROM t ORDER BY chunk_id")
    assert [c["chunk_id"] for c in chunks] == ["plain.txt#1", "plain.txt#2"]
    assert chunks[0]["knowledge_id"] == "plain"
    assert chunks[0]["access_tags"] == "{}"


def test_the_lexical_embedding_is_deterministic_and_normalised():
    embedding = LexicalEmbeddings(dimensions=256)
    first = embedding.embed_query("The case drain filter is replaced every 500 hours.")
    assert (
        first
        == LexicalEmbeddings(dimensions=256).embed_documents(
            ["The case drain filter is replaced every 500 hours."]
        )[0]
    )
    assert abs(sum(v * v for v in first) - 1.0) < 1e-9


def test_a_pdf_without_pypdf_is_refused_with_the_extra_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setitem(sys.modules, "pypdf", None)  # import pypdf now raises ImportError
    source = tmp_path / "pdfs"
    source.mkdir()
    (source / "manual.pdf").write_bytes(make_pdf(["The pump is grey."]))
    with pytest.raises(ValueError, match=r"groundlock\[pdf\]"):
        index_documents(source, tmp_path / "idx")


PDF_META = """\
knowledge_id: MM-HPU-RELIEF
knowledge_type: MAINTENANCE_PROCEDURE
title: HPU manual (PDF)
business_unit: MARINE
"""


def test_a_pdf_is_indexed_by_page_with_the_metadata_beside_it(tmp_path: Path):
    pytest.importorskip("pypdf")
    source = tmp_path / "pdfs"
    source.mkdir()
    pages = ["The pump housing is painted grey.", "The relief valve is set to 210 bar at idle."]
    (source / "hpu.pdf").write_bytes(make_pdf(pages))
    (source / "hpu.pdf.yaml").write_text(PDF_META)
    index = tmp_path / "idx"
    assert index_documents(source, index).chunks_written == 2
    chunks = read_rows(DeltaTable(index / "chunks"), "SELECT * FROM t ORDER BY page")
    assert [(c["page"], c["chunk_text"]) for c in chunks] == [(1, pages[0]), (2, pages[1])]
    assert {c["knowledge_id"] for c in chunks} == {"MM-HPU-RELIEF"}
    assert {c["document_id"] for c in chunks} == {"hpu.pdf"}
    assert json.loads(chunks[1]["access_tags"]) == {"business_unit": "MARINE"}
    # The metadata file is part of the document: unchanged, nothing is written; changed,
    # the PDF is indexed again.
    assert not index_documents(source, index).wrote
    (source / "hpu.pdf.yaml").write_text(PDF_META.replace("MARINE", "TERMINAL"))
    again = index_documents(source, index)
    assert again.changed == ("hpu.pdf",)
    chunks = read_rows(DeltaTable(index / "chunks"), "SELECT access_tags FROM t")
    assert {c["access_tags"] for c in chunks} == {'{"business_unit": "TERMINAL"}'}


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("bad.pdf", b"%PDF-1.4\n", "bad.pdf: not a readable PDF"),
        ("doc.md", b"---\nkey: [unclosed\n---\ntext\n", "doc.md: the front matter is not valid"),
        ("doc.md", b"---\n- a list\n---\ntext\n", "doc.md: the front matter is not a mapping"),
    ],
)
def test_a_damaged_document_is_refused_naming_the_file(
    tmp_path: Path, name: str, content: bytes, message: str
):
    pytest.importorskip("pypdf")
    source = tmp_path / "docs"
    source.mkdir()
    (source / name).write_bytes(content)
    with pytest.raises(ValueError, match=message):
        index_documents(source, tmp_path / "idx")
    assert not (tmp_path / "idx" / "chunks").exists()  # nothing half-written
