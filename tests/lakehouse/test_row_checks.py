"""Only rows R2 admits get into the index (issue 27, item 11).

A bundle with one row R2 refuses fails the whole request, so a document the indexer
accepted but R2 refused failed every question that retrieved it: plain Markdown
(``knowledge_type`` DOCUMENT, which no built-in policy admits), a file name the row
contract refuses, a type the policy does not list, a ``page`` or ``faiss_id`` in front
matter. The indexer now checks every row against the row contract and the policy the
index is answered under, and refuses the file (or, with ``--skip-invalid``, leaves it out).
End to end through ``groundlock index`` and ``groundlock ask`` on a real Delta index.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from deltalake import DeltaTable

from groundlock.cli import main
from groundlock.contracts.retrieval import RetrievalRow
from groundlock.lakehouse import index_documents
from groundlock.lakehouse.chunking import CITATION_KEYS, RESERVED_KEYS, DocumentRefused
from groundlock.lakehouse.indexer import CHUNK_SCHEMA, read_rows
from groundlock.policies import load_policy

CRANE = (
    "The harbour crane is inspected every 90 days by the certified crane inspector.\n\n"
    "The wire rope of the harbour crane is replaced every 2,000 operating hours.\n"
)
FUEL = (
    "---\nknowledge_id: SN-9\nknowledge_type: SAFETY_NOTICE\n---\n"
    "The tug fuel tank holds 400 litres of diesel.\n"
)
WIRE_QUESTION = "How often is the wire rope of the harbour crane replaced?"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _docs(tmp_path: Path, files: dict[str, str]) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in files.items():
        (docs / name).write_text(text)
    return docs


def test_plain_markdown_without_front_matter_answers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    docs = _docs(tmp_path, {"crane.md": CRANE, "fuel.md": FUEL})
    index = str(tmp_path / "idx")
    code, indexed, _ = _run(capsys, "index", str(docs), "--index", index)
    assert code == 0
    code, out, _ = _run(capsys, "ask", WIRE_QUESTION, "--index", index, "--json")
    response = json.loads(out)
    # Before: FAILED, DOMAIN_INTEGRITY (knowledge_type DOCUMENT), exit 1.
    assert (code, response["status"], response["failure_reason"]) == (0, "OK", None)
    assert "2,000 operating hours" in response["answer"]
    assert (
        "1 document(s) name no knowledge_type: indexed as MAINTENANCE_PROCEDURE "
        "(choose with --knowledge-type)"
    ) in indexed


def test_a_knowledge_type_the_policy_does_not_admit_is_refused_naming_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    notes = "---\nknowledge_type: NOTES\n---\n" + CRANE
    docs = _docs(tmp_path, {"fuel.md": FUEL})
    (docs / "notes").mkdir()
    (docs / "notes" / "crane.md").write_text(notes)
    code, _, err = _run(capsys, "index", str(docs), "--index", str(tmp_path / "idx"))
    assert code == 1
    assert err == (
        "groundlock: notes/crane.md: knowledge_type: 'NOTES' is not one of the "
        "allowed_knowledge_types of policy R2_POLICY_V4_LEXICAL (MAINTENANCE_PROCEDURE, "
        "INSPECTION_RECORD, FAILURE_REPORT, OPERATING_MANUAL, SAFETY_NOTICE, REGULATION)\n"
    )
    assert not (tmp_path / "idx" / "chunks").exists()  # the run wrote nothing


def test_with_skip_invalid_one_bad_document_does_not_poison_the_good_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    bad = (
        "---\nknowledge_type: NOTES\n---\n"
        "The harbour crane wire rope of the harbour crane is replaced weekly.\n"
    )
    docs = _docs(tmp_path, {"crane.md": CRANE, "fuel.md": FUEL, "rumour.md": bad})
    index = str(tmp_path / "idx")
    code, out, err = _run(capsys, "index", str(docs), "--index", index, "--skip-invalid")
    assert code == 0
    assert out.startswith("3 documents, 1 skipped: 2 (re)indexed, 0 removed, 3 chunks written\n")
    assert err.startswith("groundlock: skipped rumour.md: knowledge_type: 'NOTES' is not one")
    code, out, _ = _run(capsys, "ask", WIRE_QUESTION, "--index", index, "--json")
    response = json.loads(out)
    assert (code, response["status"]) == (0, "OK")
    assert "2,000 operating hours" in response["answer"]
    code, out, _ = _run(capsys, "index", str(docs), "--index", index, "--skip-invalid", "--json")
    report = json.loads(out)
    assert report["changed"] == []  # the skipped document is not re-indexed as changed
    assert [s["document"] for s in report["skipped"]] == ["rumour.md"]
    assert report["policy_version"] == "R2_POLICY_V4_LEXICAL"


def test_a_document_that_becomes_invalid_leaves_the_index_when_skipped(tmp_path: Path):
    docs = _docs(tmp_path, {"crane.md": CRANE, "fuel.md": FUEL})
    index = tmp_path / "idx"
    index_documents(docs, index)
    (docs / "fuel.md").write_text(FUEL.replace("SAFETY_NOTICE", "GOSSIP"))
    with pytest.raises(DocumentRefused, match=r"^fuel\.md: knowledge_type: 'GOSSIP'"):
        index_documents(docs, index)
    report = index_documents(docs, index, skip_invalid=True)
    assert report.removed == ("fuel.md",)  # its old rows go: the index holds no stale text
    ids = read_rows(DeltaTable(index / "chunks"), "SELECT DISTINCT document_id FROM t")
    assert [row["document_id"] for row in ids] == ["crane.md"]


@pytest.mark.parametrize(
    "key",
    ["page", "faiss_id", "document_id", "source_file", "chunk_id", "knowledge_type_effective",
     "source_reference", "similarity", "chunk_text", "index_version"],
)  # fmt: skip
def test_a_reserved_front_matter_key_is_refused(tmp_path: Path, key: str):
    # Before: an access tag, which filled the row field of its name when the row had none
    # (page of a Markdown file, faiss_id): R2 then refused every bundle holding the row.
    docs = _docs(tmp_path, {"doc.md": f"---\n{key}: '12'\n---\nText.\n"})
    with pytest.raises(DocumentRefused, match=rf"^doc\.md: {key}: a reserved key"):
        index_documents(docs, tmp_path / "idx")


def test_every_row_field_and_column_the_front_matter_does_not_set_is_reserved():
    fields = set(RetrievalRow.model_fields) | {"similarity"}
    columns = set(CHUNK_SCHEMA.names) | {
        "embedding",
        "embedding_model",
        "embedding_dim",
        "indexed_ts",
        "index_status",
    }
    assert (fields | columns) - CITATION_KEYS == RESERVED_KEYS


@pytest.mark.parametrize(
    ("name", "front_matter", "message"),
    [
        ("notes [draft].md", "", "chunk_id: must be 1 to 256 characters"),
        ("notes.md", "title: Manual | rev 2\n", "source_reference: must be 1 to 512"),
        ("notes.md", "event_date: 04/11/2025\n", "event_date: must be a calendar date"),
        ("notes.md", "event_date: 2025-11-04 10:00:00\n", "event_date: must be a calendar"),
        ("notes.md", "knowledge_id: '[K-1]'\n", "knowledge_id: must be 1 to 256"),
        ("notes.md", "equipment_id: ' T7'\n", "equipment_id: must be 1 to 256"),
        ("notes.md", "knowledge_type: maintenance_procedure\n", "knowledge_type: 'maint"),
    ],
)
def test_a_row_the_contract_refuses_is_refused_naming_file_and_field(
    tmp_path: Path, name: str, front_matter: str, message: str
):
    text = (f"---\n{front_matter}---\n" if front_matter else "") + CRANE
    docs = _docs(tmp_path, {name: text})
    with pytest.raises(DocumentRefused) as refused:
        index_documents(docs, tmp_path / "idx")
    assert str(refused.value).startswith(f"{name}: {message}")
    assert "\n" not in str(refused.value)


def test_the_command_line_checks_against_the_policy_it_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    docs = _docs(tmp_path, {"crane.md": CRANE})
    index = str(tmp_path / "idx")
    code, _, err = _run(capsys, "index", str(docs), "--index", index, "--policy", "R2_POLICY_V3")
    assert code == 2  # a policy ask would refuse for a lexical index; its twin is named
    assert err.endswith("pass --policy R2_POLICY_V3_LEXICAL\n")
    code, _, err = _run(capsys, "index", str(docs), "--index", index, "--knowledge-type", "NOTE")
    assert code == 2
    assert err.startswith("groundlock: error: --knowledge-type 'NOTE': policy R2_POLICY_V4_LEXICAL")
    code, _, err = _run(capsys, "index", str(docs), "--index", index, "--max-chars", "60000")
    assert code == 2
    assert "admits at most 50000" in err
    code, _, _ = _run(
        capsys, "index", str(docs), "--index", index, "--knowledge-type", "REGULATION"
    )
    assert code == 0
    rows = read_rows(DeltaTable(index + "/chunks"), "SELECT DISTINCT knowledge_type FROM t")
    assert rows == [{"knowledge_type": "REGULATION"}]


def test_a_new_default_type_reindexes_exactly_the_untyped_documents(tmp_path: Path):
    docs = _docs(tmp_path, {"crane.md": CRANE, "fuel.md": FUEL})
    index = tmp_path / "idx"
    first = index_documents(docs, index)
    assert first.untyped == ("crane.md",)
    again = index_documents(docs, index, default_knowledge_type="OPERATING_MANUAL")
    assert again.changed == ("crane.md",)
    rows = read_rows(DeltaTable(index / "chunks"), "SELECT DISTINCT knowledge_type FROM t")
    assert {row["knowledge_type"] for row in rows} == {"OPERATING_MANUAL", "SAFETY_NOTICE"}
    with pytest.raises(ValueError, match="'NOTE' is not one of the allowed_knowledge_types"):
        index_documents(docs, index, default_knowledge_type="NOTE")


def test_unchanged_documents_are_checked_again_under_another_policy(tmp_path: Path):
    docs = _docs(tmp_path, {"crane.md": CRANE, "fuel.md": FUEL})
    index = tmp_path / "idx"
    index_documents(docs, index)
    lexical = load_policy("R2_POLICY_V4_LEXICAL")
    narrower = lexical.model_copy(update={"allowed_knowledge_types": ("MAINTENANCE_PROCEDURE",)})
    with pytest.raises(DocumentRefused, match=r"^fuel\.md: knowledge_type: 'SAFETY_NOTICE'"):
        index_documents(docs, index, policy=narrower)
    assert not index_documents(docs, index, policy=lexical).wrote  # same checks: no re-check


def test_a_semantic_id_must_name_one_row_under_a_semantic_id_policy(tmp_path: Path):
    tagged = "---\nsemantic_id: CRANE_1\nknowledge_type: REGULATION\n---\n" + CRANE
    docs = _docs(tmp_path, {"crane.md": tagged})
    with pytest.raises(DocumentRefused) as refused:
        index_documents(docs, tmp_path / "idx", policy="SEMANTIC_ID_POLICY_V1")
    assert str(refused.value) == (
        "crane.md: semantic_id: 'CRANE_1' also cites crane.md#1; a [<semantic_id>] marker "
        "must name one row under policy SEMANTIC_ID_POLICY_V1 (a front-matter semantic_id "
        "names a document's one row; without it each chunk gets <knowledge_id>_<n>)"
    )


def test_without_a_semantic_id_each_chunk_is_cited_by_its_knowledge_id_and_number(
    tmp_path: Path,
):
    # Before: the chunk id was the marker, and '#' cannot be written in one, so no
    # document of an index could be cited under a [semantic_id] policy.
    docs = _docs(tmp_path, {"crane.md": CRANE, "fuel.md": FUEL})
    index = tmp_path / "idx"
    index_documents(docs, index, policy="SEMANTIC_ID_POLICY_V1_LEXICAL")
    rows = read_rows(DeltaTable(index / "chunks"), "SELECT chunk_id, semantic_id FROM t")
    assert sorted((r["chunk_id"], r["semantic_id"]) for r in rows) == [
        ("crane.md#1", "crane_1"),
        ("crane.md#2", "crane_2"),
        ("fuel.md#1", "SN-9_1"),
    ]
    # Two documents of one knowledge_id would give two rows one marker: refused, with how.
    (docs / "fuel.md").write_text(FUEL.replace("SN-9", "crane"))
    with pytest.raises(DocumentRefused) as refused:
        index_documents(docs, index, policy="SEMANTIC_ID_POLICY_V1_LEXICAL")
    assert str(refused.value).startswith("fuel.md: semantic_id: 'crane_1' also cites crane.md#1")
    assert str(refused.value).endswith(
        "(made from knowledge_id 'crane': give one of the documents another knowledge_id, "
        "or a semantic_id)"
    )


def test_a_document_without_text_does_not_count_as_changed_on_every_run(tmp_path: Path):
    docs = _docs(tmp_path, {"crane.md": CRANE, "empty.md": "---\ntitle: Empty\n---\n"})
    index = tmp_path / "idx"
    assert index_documents(docs, index).changed == ("crane.md",)
    assert not index_documents(docs, index).wrote
