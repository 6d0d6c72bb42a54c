"""The preset examples run offline and print answers cited in each preset's exact style.

Each example is run as the README tells a reader to run it; its output is checked against
its own bundle: every answer line ends with markers of the preset's shape that name rows of
that bundle, the citations listed are the ones the answer uses, and what the preset refuses
is refused as the example says.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parent.parent
PRESETS = ROOT / "examples" / "data" / "presets"


def _run(example: str) -> str:
    run = subprocess.run(
        [sys.executable, f"examples/{example}"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return run.stdout


def _bundle(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((PRESETS / name).read_text(encoding="utf-8"))
    return loaded


def _answer(out: str) -> list[str]:
    body = out.split("answer (validated, every sentence cited):\n", 1)[1]
    return body.split("\ncitations:", 1)[0].splitlines()


def _listed(out: str) -> list[str]:
    """The anchors of the printed citations, in order."""
    block = out.split("\ncitations:\n", 1)[1].split("\nconfidence:", 1)[0]
    return re.findall(r"^  \[([^\]\n]+)\] ", block, flags=re.MULTILINE)


def _check_answer(out: str, marker: re.Pattern[str], allowed: set[str]) -> list[str]:
    """The answer's markers, after checking each line ends with markers of the preset."""
    assert out.splitlines()[0].startswith("policy: ")
    assert "status: OK" in out
    lines = _answer(out)
    assert lines
    cited: list[str] = []
    for line in lines:
        assert re.search(rf"(?: {marker.pattern})+$", line), line
        assert "[C" not in line.replace("[CIT-", "")  # never the default grammar's [C0]
        cited += marker.findall(line)
    assert set(cited) <= allowed, set(cited) - allowed
    assert _listed(out) == list(dict.fromkeys(cited))
    assert "confidence: " in out
    assert "model: groundlock-extractive-v1" in out
    return cited


@pytest.mark.slow
def test_the_legal_example_cites_semantic_ids_exactly() -> None:
    out = _run("legal_semantic_id.py")
    bundle = _bundle("legal_penal_code.json")
    ids = {row.get("semantic_id", row["chunk_id"]) for row in bundle["results"]}
    cited = _check_answer(out, re.compile(r"\[([A-Za-z0-9_][A-Za-z0-9_.:/\-]*)\]"), ids)
    assert "PenalCode_420_0" in cited
    assert "commentary-fraud-c2" in cited  # a row without semantic_id: its chunk_id
    assert "PenalCode_378_0" not in cited  # below the similarity floor, never admitted
    assert "confidence: high" in out
    assert "  [PenalCode_420_0] Penal Code s. 420 (Fraudulent inducement), document " in out
    # Exact matching: an invented section and a change of case name nothing.
    assert "  [PenalCode_421_0]: FAILED INVALID_CITATION_REFERENCE" in out
    assert "  [penalcode_420_0]: FAILED INVALID_CITATION_REFERENCE" in out
    assert "  [PenalCode_420_0]: PASSED -" in out
    refusal = out.split("question: Can a landlord", 1)[1]
    assert "status: NO_EVIDENCE" in refusal
    assert "\nanswer: I cannot answer based on the provided documents.\n" in refusal


@pytest.mark.slow
def test_the_compliance_example_cites_cit_labels_with_documents_and_pages() -> None:
    out = _run("compliance_cit_label.py")
    bundle = _bundle("compliance_controls.json")
    positions = {f"CIT-{n:02d}" for n in range(1, len(bundle["results"]) + 1)}
    cited = _check_answer(out, re.compile(r"\[(CIT-\d{2})\]"), positions)
    assert cited == ["CIT-01", "CIT-02"]
    # Each marker maps back to its row's label, document and page, in evidence order.
    first, second = bundle["results"][0], bundle["results"][1]
    for anchor, row in (("CIT-01", first), ("CIT-02", second)):
        where = f"(document {row['document_id']}, p. {row['page']})"
        assert f"  [{anchor}] {row['citation_label']} {where}" in out
    assert "confidence: medium" in out  # top admitted similarity 0.86: a retrieval signal
    assert "  [CIT-05]: FAILED INVALID_CITATION_REFERENCE" in out
    assert "  [CIT-1]: FAILED MALFORMED_CITATION" in out
    assert "  [CIT-01]: PASSED -" in out
    refusal = out.split("question: Which encryption algorithm", 1)[1]
    assert "status: NO_EVIDENCE" in refusal
    assert (
        "\nanswer: INSUFFICIENT_CONTEXT: The provided context does not contain enough "
        "information to answer this question.\n"
    ) in refusal
    assert "the policy's refusal line: True" in refusal


@pytest.mark.slow
def test_the_manuals_example_cites_exact_file_and_page_and_refuses_fuzzy_markers() -> None:
    out = _run("manuals_source_page.py")
    bundle = _bundle("manuals_case_drain_filter.json")
    assert bundle["query_type"] == "summary"
    assert bundle["history"]
    pages = {f"Source: {row['source_file']}, p.{row['page']}" for row in bundle["results"]}
    marker = re.compile(r"\[(Source: [^\[\]\n,;]+?, p\.\d+)\]")
    cited = _check_answer(out, marker, pages)
    assert "Source: Tug AMM 29-11-00.pdf, p.14" in cited
    assert "Source: Tug Operating Manual.pdf, p.41" not in cited  # below the floor
    assert "query type: summary (at most 300 words, 1000 output tokens)" in out
    assert "history: 2 turns given (window: the newest 10 turns within 600 tokens)" in out
    assert "  [Source: Tug AMM 29-11-00.pdf, p.15] page 15 of Tug AMM 29-11-00" in out
    # 004's cascade is not offered: a near marker is an invalid reference.
    for label in ("file name shortened", "right page, wrong file", "page not admitted"):
        assert f"  {label}: FAILED INVALID_CITATION_REFERENCE" in out
    assert "  exact file and page: PASSED -" in out
    # History is background, never evidence.
    assert "  history-only fact: FAILED UNSUPPORTED_VALUE" in out


@pytest.mark.parametrize(
    "example", ["legal_semantic_id.py", "compliance_cit_label.py", "manuals_source_page.py"]
)
def test_each_preset_example_is_named_in_the_readme(example: str) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"python examples/{example}" in readme
