"""Every preset answers from a lexical index, through its frozen lexical twin (issue 28).

Before, a lexical index refused every policy gated above 0.5 (all the presets) with a hint
that named only ``LEXICAL_POLICY_V1``, and its rows could not be cited by the presets
anyway: a Markdown chunk had no page, a chunk id (``crane.md#2``) cannot be a
``[semantic_id]`` marker, and no row had a citation label. Now each preset has a twin (the
same policy with the lexical gates), a preset passed for a lexical index is refused naming
its twin, and every row carries a page, a semantic id and a citation label. Through
``groundlock.cli.main`` and the library, on real Delta indexes of text and PDF files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from deltalake import DeltaTable

from groundlock import grounded_answer_chain
from groundlock.cli import main
from groundlock.lakehouse import (
    LEXICAL_POLICY,
    LEXICAL_TWINS,
    DeltaVectorStore,
    LexicalEmbeddings,
    index_documents,
    run_eval,
)
from groundlock.lakehouse import indexer as indexer_module
from groundlock.lakehouse.evaluation import EvalItem
from groundlock.lakehouse.indexer import read_rows
from groundlock.policies import load_policy
from groundlock.runnables.retrieve import RetrievalFront
from tests.lakehouse.pdf import make_pdf

POLICIES = Path(load_policy.__code__.co_filename).parent
CRANE = (
    "---\nknowledge_id: MM-CRANE-7\nknowledge_type: MAINTENANCE_PROCEDURE\n"
    "title: Harbour crane manual\n---\n"
    "The harbour crane is inspected every 90 days by the certified crane inspector.\n\n"
    "The wire rope of the harbour crane is replaced every 2,000 operating hours.\n"
)
WIRE = "How often is the wire rope of the harbour crane replaced?"
RELIEF = "What is the relief valve of the hydraulic pump set to?"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def index(tmp_path: Path) -> str:
    """A text file (no front-matter semantic_id or label) and a two-page PDF, indexed."""
    pytest.importorskip("pypdf")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "crane.txt").write_text(CRANE)
    (docs / "hpu.pdf").write_bytes(
        make_pdf(
            [
                "The fuel tank of the tug holds 400 litres of diesel.",
                "The relief valve of the hydraulic pump is set to 210 bar at idle.",
            ]
        )
    )
    (docs / "hpu.pdf.yaml").write_text(
        "knowledge_id: MM-HPU-RELIEF\nknowledge_type: MAINTENANCE_PROCEDURE\n"
    )
    location = str(tmp_path / "idx")
    index_documents(docs, location)  # checked under the default lexical policy, as `index` does
    return location


NEW_TWINS = sorted(set(LEXICAL_TWINS) - {"R2_POLICY_V2"})
"""The twins added with this test (R2_POLICY_V2's, LEXICAL_POLICY_V1, came first)."""


@pytest.mark.parametrize("preset", NEW_TWINS)
def test_each_twin_is_its_preset_with_the_lexical_gates_and_is_locked(preset: str):
    twin_name = LEXICAL_TWINS[preset]
    original, twin, lexical = (
        load_policy(preset),
        load_policy(twin_name),
        load_policy(LEXICAL_POLICY),
    )
    own = {"policy_version", "description", "min_top_similarity_score", "min_similarity_score"}
    assert twin.model_dump(exclude=own) == original.model_dump(exclude=own)
    gates = (twin.min_top_similarity_score, twin.min_similarity_score)
    assert gates == (lexical.min_top_similarity_score, lexical.min_similarity_score) == (0.33, 0.33)
    assert twin.description.startswith(f"{preset} with its similarity gates calibrated")
    lock = (POLICIES / f"{twin_name}.sha256").read_text(encoding="ascii").split()
    assert lock == [twin.policy_sha256, f"{twin_name}.json"]


@pytest.mark.parametrize("preset", sorted(LEXICAL_TWINS))
def test_a_preset_asked_of_a_lexical_index_is_refused_naming_its_twin(
    preset: str, index: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    twin = LEXICAL_TWINS[preset]
    code, out, err = _run(capsys, "ask", WIRE, "--index", index, "--policy", preset)
    assert (code, out) == (2, "")
    assert err.startswith(f"groundlock: error: policy {preset} gates answers at a top similarity")
    assert err.endswith(
        f"Its lexical twin {twin} is the same policy with both gates at 0.33: pass --policy "
        f"{twin}\n"
    )
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"id": "g1", "question": WIRE, "answerable": True}) + "\n")
    code, out, err = _run(capsys, "eval", str(gold), "--index", index, "--policy", preset)
    assert (code, out) == (2, "")
    assert err.endswith(f"pass --policy {twin}\n")


def test_a_policy_without_a_twin_is_refused_with_the_lexical_choices(
    index: str, capsys: pytest.CaptureFixture[str]
):
    code, _, err = _run(capsys, "ask", WIRE, "--index", index, "--policy", "R2_POLICY_V3_STRICT")
    assert code == 2
    assert err.endswith(
        "Omit --policy (or pass --policy R2_POLICY_V4_LEXICAL) to use the lexical calibration, "
        "or pass a preset's lexical twin (CIT_LABEL_POLICY_V1_LEXICAL, "
        "CIT_LABEL_POLICY_V2_LEXICAL, LEXICAL_POLICY_V1, R2_POLICY_V3_LEXICAL, "
        "SEMANTIC_ID_POLICY_V1_LEXICAL, "
        "SEMANTIC_ID_POLICY_V2_LEXICAL, SOURCE_PAGE_POLICY_V1_LEXICAL, "
        "SOURCE_PAGE_POLICY_V2_LEXICAL, SOURCE_PAGE_POLICY_V3_LEXICAL)\n"
    )


@pytest.mark.parametrize(
    ("twin", "wire", "relief"),
    [
        ("SOURCE_PAGE_POLICY_V1_LEXICAL", "Source: crane.txt, p.1", "Source: hpu.pdf, p.2"),
        ("SOURCE_PAGE_POLICY_V2_LEXICAL", "Source: crane.txt, p.1", "Source: hpu.pdf, p.2"),
        ("SEMANTIC_ID_POLICY_V1_LEXICAL", "MM-CRANE-7_2", "MM-HPU-RELIEF_p2.1"),
        ("CIT_LABEL_POLICY_V1_LEXICAL", "CIT-01", "CIT-01"),
        ("R2_POLICY_V3_LEXICAL", "C0", "C0"),
    ],
)
def test_every_twin_answers_from_text_and_pdf_rows_of_the_index(
    twin: str, wire: str, relief: str, index: str, capsys: pytest.CaptureFixture[str]
):
    for question, anchor, answer, page, label in (
        (WIRE, wire, "2,000 operating hours", 1, "Harbour crane manual"),
        (RELIEF, relief, "210 bar", 2, "hpu.pdf"),
    ):
        code, out, _ = _run(capsys, "ask", question, "--index", index, "--policy", twin, "--json")
        response = json.loads(out)
        assert (code, response["status"]) == (0, "OK"), response
        assert answer in response["answer"]
        assert response["answer"].rstrip().endswith(f"[{anchor}]")
        cited = response["citations"][0]
        assert (cited["anchor"], cited["page"], cited["citation_label"]) == (anchor, page, label)


def test_the_v2_twin_cites_a_markdown_file_the_v1_twin_withholds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    # .md is also a top-level domain: source_page_v1 reads [Source: crane.md, p.1] as a link.
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "crane.md").write_text(CRANE)
    index = str(tmp_path / "idx")
    index_documents(docs, index, policy="SOURCE_PAGE_POLICY_V2_LEXICAL")
    ask = ("ask", WIRE, "--index", index, "--json", "--policy")
    code, out, _ = _run(capsys, *ask, "SOURCE_PAGE_POLICY_V2_LEXICAL")
    response = json.loads(out)
    assert (code, response["status"]) == (0, "OK"), response
    assert response["answer"].rstrip().endswith("[Source: crane.md, p.1]")
    assert [c["anchor"] for c in response["citations"]] == ["Source: crane.md, p.1"]
    code, out, _ = _run(capsys, *ask, "SOURCE_PAGE_POLICY_V1_LEXICAL")
    response = json.loads(out)
    assert (code, response["status"], response["failure_reason"]) == (
        1, "FAILED", "UNSAFE_OUTPUT"
    )  # fmt: skip


def test_a_markdown_chunk_is_page_1_and_keeps_its_unpaged_id(tmp_path: Path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "crane.md").write_text(CRANE.replace("title: Harbour crane manual\n", ""))
    index_documents(docs, tmp_path / "idx", policy="SOURCE_PAGE_POLICY_V1_LEXICAL")
    rows = read_rows(DeltaTable(tmp_path / "idx" / "chunks"), "SELECT * FROM t ORDER BY chunk_id")
    assert [
        (r["chunk_id"], r["page"], r["source_reference"], r["citation_label"], r["semantic_id"])
        for r in rows
    ] == [
        ("crane.md#1", 1, "crane.md, para. 1", "crane.md", "MM-CRANE-7_1"),
        ("crane.md#2", 1, "crane.md, para. 2", "crane.md", "MM-CRANE-7_2"),
    ]


def test_a_new_row_version_rewrites_every_document_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # What a row holds enters each document's hash: an index written before rows carried a
    # page, a semantic id and a label is rewritten by the next run, not left without them.
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "crane.md").write_text(CRANE)
    index = tmp_path / "idx"
    index_documents(docs, index)
    assert not index_documents(docs, index).wrote
    monkeypatch.setattr(indexer_module, "ROWS_VERSION", indexer_module.ROWS_VERSION + 1)
    assert index_documents(docs, index).changed == ("crane.md",)
    assert not index_documents(docs, index).wrote


def test_eval_under_a_preset_twin_scores_the_chunks_its_markers_cite(index: str):
    # Before, eval read the public anchors (CIT-01, MM-CRANE-7_2, Source: ...) as R2's
    # anchors: every preset answer scored precision 0, "answered without citing" its chunk.
    front = RetrievalFront.over_index(DeltaVectorStore(index, LexicalEmbeddings()), top_k=4)
    items = [
        EvalItem(id="wire", question=WIRE, expected_citations=("crane.txt#2",), answerable=True),
        EvalItem(id="relief", question=RELIEF, expected_citations=("hpu.pdf#p2.1",),
                 answerable=True),
    ]  # fmt: skip
    for twin in ("SOURCE_PAGE_POLICY_V1_LEXICAL", "SEMANTIC_ID_POLICY_V1_LEXICAL",
                 "CIT_LABEL_POLICY_V1_LEXICAL", "R2_POLICY_V3_LEXICAL"):  # fmt: skip
        rows = run_eval(items, grounded_answer_chain(front=front, policy=twin), run_id=twin)
        assert [(r.actual_citations, r.citation_precision, r.passed) for r in rows] == [
            (("crane.txt#2",), 1.0, True),
            (("hpu.pdf#p2.1",), 1.0, True),
        ], twin
