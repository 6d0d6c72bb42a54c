"""Reading a document is bounded: front matter without aliases, shallow and small; UTF-8.

A file the indexer refuses is named on one line of stderr, with why, and the command exits
1 (issue 27, item 9). Through the real command line, in-process.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from groundlock.cli import main
from groundlock.lakehouse import index_documents
from groundlock.lakehouse.chunking import (
    MAX_FRONT_MATTER_BYTES,
    DocumentRefused,
    _front_matter,
    read_document,
)

BODY = "The relief valve is set to 210 bar.\n"


def _alias_bomb(levels: int) -> str:
    """Front matter of ``levels`` lists of nine aliases of the list before: 9**levels lols."""
    lines = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    previous = "a"
    for name in "bcdefghij"[: levels - 1]:
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 9) + "]")
        previous = name
    return "---\n" + "\n".join(lines) + "\n---\n" + BODY


def _index(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = main(["index", str(tmp_path / "docs"), "--index", str(tmp_path / "idx"), *extra])
    _, err = capsys.readouterr()
    return code, err


def _docs(tmp_path: Path, files: dict[str, bytes]) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("---\nknowledge_type: SAFETY_NOTICE\n---\n" + BODY)
    for name, content in files.items():
        (docs / name).write_bytes(content)
    return docs


def test_an_alias_bomb_in_front_matter_is_refused_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    # Six levels: 531,441 strings once expanded. (Nine levels, 1 kB, kept the old indexer
    # running for minutes; this one it accepted, expanded, as access tags.)
    _docs(tmp_path, {"bomb.md": _alias_bomb(6).encode()})
    started = time.process_time()
    code, err = _index(tmp_path, capsys)
    assert time.process_time() - started < 10.0
    assert code == 1
    assert err.count("\n") == 1
    assert err.startswith("groundlock: bomb.md: the front matter is not valid YAML")
    assert "anchors and aliases are not allowed" in err
    assert not (tmp_path / "idx" / "chunks").exists()  # nothing written


def test_the_issues_one_kilobyte_bomb_is_refused_at_its_first_anchor():
    # The YAML alone, never expanded: the old reader loaded it (aliases share one list)
    # and the bomb went off later, when its tags were turned into strings.
    bomb = _alias_bomb(9)
    assert len(bomb) < 1024
    started = time.process_time()
    with pytest.raises(DocumentRefused, match="anchors and aliases are not allowed"):
        _front_matter(bomb.split("---\n")[1], "bomb.md")
    assert time.process_time() - started < 1.0


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        # Python's recursion limit was reached in YAML's composer: "failed (RecursionError)".
        ("deep.md", b"---\nk: " + b"[" * 3000 + b"]" * 3000 + b"\n---\nx\n", "nested deeper than"),
        (
            "deep-block.md",
            b"---\n" + b"".join(b" " * i + b"k:\n" for i in range(40)) + b"---\nx\n",
            "nested deeper than",
        ),
        # A UnicodeDecodeError without the file's name.
        ("latin1.md", "Caf\u00e9 au lait.\n".encode("latin-1"), "not UTF-8 text"),
        ("latin1.txt", b"ok\n\nbad \xff\n", "not UTF-8 text (an invalid byte at offset 8)"),
        # ValueErrors from YAML's constructors, again without the file's name.
        ("date.md", b"---\nevent_date: 2026-02-30\n---\nx\n", "a value YAML cannot read"),
        ("digits.md", b"---\nserial: " + b"9" * 5000 + b"\n---\nx\n", "a value YAML cannot read"),
        (
            "huge.md",
            b"---\nnote: '" + b"x" * MAX_FRONT_MATTER_BYTES + b"'\n---\nx\n",
            "the front matter is larger than the limit of 65,536 bytes",
        ),
    ],
)
def test_a_file_the_reader_cannot_take_is_refused_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: bytes, message: str
):
    _docs(tmp_path, {name: content})
    code, err = _index(tmp_path, capsys)
    assert code == 1
    assert err.count("\n") == 1
    assert err.startswith(f"groundlock: {name}: ")
    assert message in err


def test_a_pdf_metadata_file_with_an_alias_is_refused_naming_it(tmp_path: Path):
    pytest.importorskip("pypdf")
    from tests.lakehouse.pdf import make_pdf  # noqa: PLC0415

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "hpu.pdf").write_bytes(make_pdf(["The pump is grey."]))
    (docs / "hpu.pdf.yaml").write_text("unit: &u MARINE\nbusiness_unit: *u\n")
    with pytest.raises(DocumentRefused, match=r"^hpu\.pdf\.yaml: .*anchors and aliases"):
        index_documents(docs, tmp_path / "idx")


def test_front_matter_behind_a_byte_order_mark_is_read(tmp_path: Path):
    (tmp_path / "bom.md").write_bytes(
        "\ufeff---\nknowledge_id: MM-7\nbusiness_unit: MARINE\n---\nText.\n".encode()
    )
    document = read_document(tmp_path / "bom.md", tmp_path)
    assert document.metadata == {"knowledge_id": "MM-7"}
    assert document.access_tags == {"business_unit": "MARINE"}
    assert document.pages == ((None, "Text.\n"),)


def test_a_skipped_unreadable_file_is_reported_and_the_rest_is_indexed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    _docs(tmp_path, {"bomb.md": _alias_bomb(3).encode(), "bad.txt": b"\xff\xfe"})
    code, err = _index(tmp_path, capsys, "--skip-invalid")
    assert code == 0
    assert err.splitlines() == [
        "groundlock: skipped bad.txt: not UTF-8 text (an invalid byte at offset 0)",
        "groundlock: skipped bomb.md: the front matter is not valid YAML (anchors and aliases "
        "are not allowed, front-matter line 1)",
    ]
    report = index_documents(tmp_path / "docs", tmp_path / "idx", skip_invalid=True)
    assert not report.wrote
    assert [name for name, _ in report.skipped] == ["bad.txt", "bomb.md"]
