"""The chunker is linear in a paragraph's length, and a document has a size limit.

Issue 27, item 10: one 8 MB paragraph took 5.5 s to chunk and 60 MB gave no result in six
minutes, because every cut copied the rest of the paragraph. Chunk ids and texts of
ordinary documents are unchanged: pinned below by a digest taken before the fix, and by a
comparison with the old cutting rule on random text.
"""

from __future__ import annotations

import hashlib
import random
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from groundlock.cli import main
from groundlock.lakehouse import index_documents
from groundlock.lakehouse.chunking import (
    MAX_DOCUMENT_BYTES,
    DocumentRefused,
    _pieces,
    chunk_document,
    discover,
    read_document,
)
from tests.lakehouse.conftest import HANDBOOK

WORDS = ("alpha", "be", "gamma", "delta", "epsilonic")


def _paragraph(characters: int) -> str:
    """One paragraph of about ``characters`` characters: words and single spaces."""
    line = " ".join(WORDS)
    return " ".join([line] * (characters // (len(line) + 1)))


def _cpu_seconds(text: str, max_chars: int) -> float:
    """The least CPU time of three runs of the chunker over ``text``."""
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        for _piece in _pieces(text, max_chars):
            pass
        best = min(best, time.process_time() - started)
    return best


def test_chunking_one_long_paragraph_scales_linearly():
    # Before the fix: 0.12 s at 2 MB and 0.45 s at 4 MB (a ratio near 4).
    small, large = _paragraph(2_000_000), _paragraph(4_000_000)
    ratio = _cpu_seconds(large, 1200) / _cpu_seconds(small, 1200)
    assert ratio < 3.0, f"2n/n CPU time ratio {ratio:.2f}"


def _old_pieces(text: str, max_chars: int) -> Iterator[str]:
    """The cutting rule before the fix (quadratic), kept as the reference for its output."""
    for raw in re.split(r"\n\s*\n", text):
        rest = " ".join(raw.split())
        while len(rest) > max_chars:
            cut = rest.rfind(" ", 0, max_chars)
            cut = cut if cut > 0 else max_chars
            yield rest[:cut]
            rest = rest[cut:].lstrip()
        if rest:
            yield rest


def test_the_pieces_are_those_of_the_old_cutting_rule():
    rng = random.Random(27)
    alphabet = ["a", "bb", "ccc", " ", "  ", "\n", "\n\n", " \n \n", "\t", "x" * 60,
                "\u00a0", "\u00e9", "\u2003", "\r\n"]  # fmt: skip
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 300)))
        max_chars = rng.choice([1, 2, 3, 5, 10, 50, 1200])
        assert list(_pieces(text, max_chars)) == list(_old_pieces(text, max_chars)), (
            text,
            max_chars,
        )


@pytest.mark.parametrize(
    ("max_chars", "count", "digest"),
    [
        (1200, 16, "7e60846c822394f5fd21a45fe1222f985f4dca0cd5c8ff1cd230b34bbc20ef64"),
        (60, 51, "121cba0e2a54f4f6b50e45f62a7522fe31f1c9c3e4394c091da6c19a0ab03963"),
    ],
)
def test_the_handbooks_chunk_ids_and_texts_are_unchanged(max_chars: int, count: int, digest: str):
    # Digests of every (chunk_id, chunk_text) of the handbook, taken on commit 070f10f.
    sha = hashlib.sha256()
    chunks = [
        chunk
        for path in discover(HANDBOOK)
        for chunk in chunk_document(read_document(path, HANDBOOK), max_chars=max_chars)
    ]
    for chunk in chunks:
        sha.update(f"{chunk.chunk_id}\0{chunk.chunk_text}\0".encode())
    assert (len(chunks), sha.hexdigest()) == (count, digest)


def test_a_document_over_the_size_limit_is_refused_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ok.md").write_text("---\nknowledge_type: SAFETY_NOTICE\n---\nShort.\n")
    (docs / "dump.txt").write_text(_paragraph(1_200_000))
    argv = ["index", str(docs), "--index", str(tmp_path / "idx"), "--max-document-mb", "1"]
    code = main(argv)
    _, err = capsys.readouterr()
    assert code == 1
    assert err == ("groundlock: dump.txt: the file is larger than the limit of 1,048,576 bytes\n")
    assert not (tmp_path / "idx" / "chunks").exists()


def test_the_default_size_limit_is_16_mib_and_the_command_line_shows_it(
    capsys: pytest.CaptureFixture[str],
):
    assert MAX_DOCUMENT_BYTES == 16 * 1024 * 1024
    assert main(["index", "--help"]) == 0
    assert "larger (default 16)" in " ".join(capsys.readouterr().out.split())


def test_a_pdf_file_over_eight_times_the_text_limit_is_refused_before_it_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    pypdf = pytest.importorskip("pypdf")
    from tests.lakehouse.pdf import make_pdf  # noqa: PLC0415

    opened: list[object] = []
    reader = pypdf.PdfReader
    monkeypatch.setattr(pypdf, "PdfReader", lambda *a, **k: opened.append(a) or reader(*a, **k))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ok.md").write_text("---\nknowledge_type: SAFETY_NOTICE\n---\nShort.\n")
    # A few words of text in a file of 8 MiB and more: under the text limit of 1 MiB, and
    # indexed before (pypdf read the whole file into memory first).
    (docs / "scan.pdf").write_bytes(make_pdf(["The pump is grey."], padding=8 * 1024 * 1024))
    argv = ["index", str(docs), "--index", str(tmp_path / "idx"), "--max-document-mb", "1"]
    code = main(argv)
    _, err = capsys.readouterr()
    assert code == 1
    assert err == "groundlock: scan.pdf: the PDF file is larger than the limit of 8,388,608 bytes\n"
    assert opened == []  # pypdf never saw it
    assert not (tmp_path / "idx" / "chunks").exists()
    # Under the bound (a text limit of 2 MiB: a file of 16 MiB) it is read and indexed.
    assert main([*argv[:-1], "2"]) == 0
    assert len(opened) == 1


def test_a_pdf_whose_text_is_over_the_limit_is_refused(tmp_path: Path):
    pytest.importorskip("pypdf")
    from tests.lakehouse.pdf import make_pdf  # noqa: PLC0415

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "manual.pdf").write_bytes(make_pdf(["x" * 80] * 4))  # 1,668 bytes, 320 of text
    # (300: the file, under eight times that, is read; its text is not under 300)
    with pytest.raises(DocumentRefused, match=r"^manual\.pdf: its text is larger than the limit"):
        index_documents(docs, tmp_path / "idx", max_document_bytes=300)
    assert index_documents(docs, tmp_path / "idx", max_document_bytes=400).chunks_written == 4
