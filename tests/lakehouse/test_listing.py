"""``groundlock index --list``: what an index holds, for a gold set's chunk ids (issue 28).

A gold set names the chunks a correct answer cites by id, and a ``[semantic_id]`` or
``[CIT-NN]`` answer cites by fields of the row; before, the only way to see either was to
query the Delta tables by hand. Through ``groundlock.cli.main`` on real Delta indexes, and
once as a separate process whose reader goes away (``| head``).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from groundlock.cli import main
from groundlock.lakehouse import index_documents, list_chunks
from tests.lakehouse.pdf import make_pdf

ROOT = Path(__file__).parents[2]
PARAGRAPHS = "\n\n".join(f"Step {n} of the winch overhaul is checked by the bosun." for n in
                         range(1, 12))  # fmt: skip
WINCH = f"---\nknowledge_id: WINCH-OH\ntitle: Winch overhaul\n---\n{PARAGRAPHS}\n"


def _cells(line: str) -> list[str]:
    """A table line's cells (columns are two or more spaces apart)."""
    return re.split(r"\s{2,}", line)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def index(corpus: Path, tmp_path: Path) -> str:
    """The handbook's six documents, a document of eleven paragraphs and a two-page PDF."""
    pytest.importorskip("pypdf")
    (corpus / "winch-overhaul.md").write_text(WINCH)
    (corpus / "hpu.pdf").write_bytes(
        make_pdf(["The pump housing is painted grey.", "The relief valve is set to 210 bar."])
    )
    (corpus / "hpu.pdf.yaml").write_text(
        "knowledge_id: MM-HPU-RELIEF\nknowledge_type: MAINTENANCE_PROCEDURE\n"
    )
    location = str(tmp_path / "idx")
    index_documents(corpus, location)
    return location


def test_list_prints_one_line_per_chunk_in_reading_order(
    index: str, capsys: pytest.CaptureFixture[str]
):
    code, out, err = _run(capsys, "index", "--list", "--index", index, "--document",
                          "winch-overhaul.md", "--document", "hpu.pdf")  # fmt: skip
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == [
        "chunk_id", "page", "knowledge_type", "semantic_id", "citation_label", "text",
    ]  # fmt: skip
    ids = [line.split()[0] for line in lines[1:-1]]
    # By document, page, then paragraph: #10 after #9, not after #1 as text sorts.
    assert ids == ["hpu.pdf#p1.1", "hpu.pdf#p2.1"] + [f"winch-overhaul.md#{n}" for n in
                                                     range(1, 12)]  # fmt: skip
    # A PDF's page; its label is its path (it names no title).
    assert _cells(lines[2]) == [
        "hpu.pdf#p2.1", "2", "MAINTENANCE_PROCEDURE", "MM-HPU-RELIEF_p2.1", "hpu.pdf",
        "The relief valve is set to 210 bar.",
    ]  # fmt: skip
    # A Markdown file is page 1; its text is cut between words, and says so.
    assert _cells(lines[-2]) == [
        "winch-overhaul.md#11", "1", "MAINTENANCE_PROCEDURE", "WINCH-OH_11", "Winch overhaul",
        "Step 11 of the winch overhaul is checked by the…",
    ]  # fmt: skip
    assert lines[-1].startswith("13 chunk(s); index_version lh-")
    assert lines[-1].endswith(" (lexical-hash-2048)")


def test_list_documents_gives_one_line_per_document(index: str, capsys: pytest.CaptureFixture[str]):
    code, out, _ = _run(capsys, "index", "--list", "documents", "--index", index)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == [
        "document", "chunks", "pages", "knowledge_id", "knowledge_type", "citation_label",
    ]  # fmt: skip
    rows = {line.split()[0]: line.split()[1:4] for line in lines[1:-1]}
    assert len(rows) == 8
    assert rows["hpu.pdf"] == ["2", "1-2", "MM-HPU-RELIEF"]
    assert rows["tug7-hpu-maintenance.md"] == ["5", "1", "MM-TUG7-HPU-04"]
    assert lines[-1].startswith("8 document(s); index_version lh-")
    code, out, _ = _run(capsys, "index", "--list", "documents", "--index", index, "--json",
                        "--document", "crane-slew-bearing.md")  # fmt: skip
    assert json.loads(out) == {
        "document_id": "crane-slew-bearing.md",
        "source_file": "crane-slew-bearing.md",
        "chunks": 2,
        "first_page": 1,
        "last_page": 1,
        "knowledge_id": "MM-STS2-SLEW-02",
        "knowledge_type": "MAINTENANCE_PROCEDURE",
        "citation_label": "Ship-to-shore crane 2 manual, ch. 2 (slew bearing)",
        "equipment_id": "STS2-SLEW",
        "event_date": "2025-11-04",
        "access_tags": {"business_unit": "TERMINAL", "sensitivity_level": "INTERNAL"},
    }


def test_list_json_is_one_object_per_chunk_with_every_citation_field(
    index: str, capsys: pytest.CaptureFixture[str]
):
    code, out, err = _run(capsys, "index", "--list", "--index", index, "--json",
                          "--document", "crane-slew-bearing.md")  # fmt: skip
    assert (code, err) == (0, "")
    chunks = [json.loads(line) for line in out.splitlines()]
    assert [c["chunk_id"] for c in chunks] == ["crane-slew-bearing.md#1", "crane-slew-bearing.md#2"]
    second = chunks[1]
    assert {
        k: second[k] for k in ("page", "semantic_id", "citation_label", "source_reference")
    } == {
        "page": 1,
        "semantic_id": "MM-STS2-SLEW-02_2",
        "citation_label": "Ship-to-shore crane 2 manual, ch. 2 (slew bearing)",
        "source_reference": "Ship-to-shore crane 2 manual, ch. 2 (slew bearing), para. 2",
    }
    assert second["access_tags"] == {"business_unit": "TERMINAL", "sensitivity_level": "INTERNAL"}
    assert "1,250 Nm" in second["chunk_text"]  # the whole text, not its first words


def test_a_cut_listing_says_so_and_how_to_see_more(index: str, capsys: pytest.CaptureFixture[str]):
    more = (
        "more chunks match: only the first 3 of 29 are shown; see more with --limit N, or "
        "fewer with --document DOC"
    )
    code, out, err = _run(capsys, "index", "--list", "--index", index, "--limit", "3")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert len(lines) == 1 + 3 + 2
    assert lines[-2].startswith("3 chunk(s); ")
    assert lines[-1] == more
    # Under --json every stdout line is a chunk: the notice goes to stderr.
    code, out, err = _run(capsys, "index", "--list", "--index", index, "--limit", "3", "--json")
    assert (code, len(out.splitlines())) == (0, 3)
    assert err == f"groundlock: {more}\n"
    code, out, _ = _run(capsys, "index", "--list", "documents", "--index", index, "--limit", "8")
    assert "more documents match" not in out  # exactly the limit: nothing was cut


def test_a_document_the_index_does_not_hold_is_named(
    index: str, capsys: pytest.CaptureFixture[str]
):
    code, out, err = _run(capsys, "index", "--list", "--index", index, "--document", "crane.md")
    assert code == 0  # a listing that matches nothing is still a listing
    assert out.splitlines()[-1].startswith("0 chunk(s); ")
    assert err == (
        "groundlock: the index holds no document 'crane.md' (see: groundlock index --list "
        "documents)\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["SOURCE", "--list"], "--list reads an index; SOURCE is for building one"),
        (["--list", "--policy", "R2_POLICY_V3"], "--policy is for building one"),
        (["--list", "--skip-invalid"], "--skip-invalid is for building one"),
        (["--list", "--max-chars", "900"], "--max-chars is for building one"),
        (["--list", "--limit", "0"], "--limit must be between 1 and 1,000,000"),
        (["--list", "chapters"], "invalid choice: 'chapters'"),
        (["SOURCE", "--document", "a.md"], "--document goes with --list"),
        (["SOURCE", "--limit", "5"], "--limit goes with --list"),
        (["SOURCE", "--document", "a.md", "--limit", "5"], "--document and --limit go with --list"),
        ([], "index needs a SOURCE"),
        (["--list", "--index", "NOWHERE"], "no lakehouse index at"),
    ],
)
def test_list_usage_errors_exit_2(
    index: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
):
    where = {"SOURCE": str(tmp_path / "docs"), "NOWHERE": str(tmp_path / "none")}
    argv = [where.get(arg, arg) for arg in argv]
    if "--index" not in argv:
        argv += ["--index", index]
    code, out, err = _run(capsys, "index", *argv)
    assert (code, out) == (2, "")
    assert message in err


def test_the_help_says_what_a_chunk_id_names(capsys: pytest.CaptureFixture[str]):
    code, help_text, _ = _run(capsys, "index", "--help")
    assert code == 0
    flat = " ".join(help_text.split())
    assert "groundlock index --list [chunks|documents] --index PATH" in flat
    assert "<document>#<n> is paragraph n of a Markdown or text file (crane-slew-bearing.md#2)" in (
        flat
    )
    assert "<document>#p<page>.<n> paragraph n of page <page> of a PDF (manual.pdf#p3.1)" in flat
    assert "expected_citations" in flat


def test_the_library_lists_what_the_command_prints(index: str):
    listing = list_chunks(index, documents=["hpu.pdf"])
    assert [(c.chunk_id, c.page, c.semantic_id) for c in listing.items] == [
        ("hpu.pdf#p1.1", 1, "MM-HPU-RELIEF_p1.1"),
        ("hpu.pdf#p2.1", 2, "MM-HPU-RELIEF_p2.1"),
    ]
    assert (listing.matched, listing.cut, listing.missing) == (2, False, ())
    with pytest.raises(ValueError, match="limit must be at least 1"):
        list_chunks(index, limit=0)


@pytest.mark.slow
def test_a_listing_whose_reader_goes_away_ends_quietly(tmp_path: Path):
    # Larger than a pipe holds, so the listing is still writing when the reader leaves.
    docs = tmp_path / "docs"
    docs.mkdir()
    paragraphs = "\n\n".join(f"Paragraph {n} of the long manual." for n in range(1, 1501))
    (docs / "long.md").write_text(paragraphs + "\n")
    index = str(tmp_path / "idx")
    index_documents(docs, index)
    listing = subprocess.Popen(
        [sys.executable, "-m", "groundlock", "index", "--list", "--index", index,
         "--limit", "5000"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert listing.stdout is not None
    assert listing.stderr is not None
    first = listing.stdout.readline()  # what `| head -1` reads, then it exits
    listing.stdout.close()
    with listing.stderr:
        err = listing.stderr.read()
    assert listing.wait() == 0
    assert first.split()[0] == b"chunk_id"
    assert err == b""  # no "failed (BrokenPipeError)", no traceback
