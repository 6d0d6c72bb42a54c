"""The lexical-index examples run offline and print what they promise.

``examples/lakehouse_presets.py`` is run as a reader would run it; its output is checked
against the handbook it indexes: the rows pass every twin's grammar, the preset itself
(gated for a neural embedding) refuses what its twin answers, each answer line ends with
markers of the preset's shape naming rows of the index, and the unanswerable question gets
each preset's exact refusal. The handbook is indexed as it is, Markdown: its file names are
host names to a linkifier, which ``SOURCE_PAGE_POLICY_V2``'s twin cites and
``SOURCE_PAGE_POLICY_V1``'s withholds.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped]

ROOT = Path(__file__).parent.parent
HANDBOOK = ROOT / "examples" / "handbook" / "docs"
TWINS = {
    "SOURCE_PAGE_POLICY_V2_LEXICAL": (
        r"\[(Source: [^\[\]\n,;]+?, p\.\d+)\]",
        "I could not find this in your documents.",
    ),
    "SEMANTIC_ID_POLICY_V1_LEXICAL": (
        r"\[([A-Za-z0-9_][A-Za-z0-9_.:/\-]*_\d+)\]",
        "I cannot answer based on the provided documents.",
    ),
    "CIT_LABEL_POLICY_V1_LEXICAL": (
        r"\[(CIT-\d{2})\]",
        "INSUFFICIENT_CONTEXT: The provided context does not contain enough information to "
        "answer this question.",
    ),
}


def _run(example: str) -> str:
    run = subprocess.run(
        [sys.executable, f"examples/{example}"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert run.stderr == ""
    return run.stdout


def _handbook() -> dict[str, dict[str, object]]:
    """Each handbook document's front matter, by its file name."""
    documents = {}
    for path in sorted(HANDBOOK.glob("*.md")):
        front = path.read_text(encoding="utf-8").split("---\n")[1]
        documents[path.name] = yaml.safe_load(front)
    return documents


def _answers(block: str) -> list[list[str]]:
    """The answer lines of each OK answer in one policy's block."""
    parts = block.split("answer (validated, every sentence cited):\n")[1:]
    return [part.split("\ncitations:", 1)[0].splitlines() for part in parts]


@pytest.mark.slow
def test_the_presets_example_answers_from_the_index_under_each_twin() -> None:
    out = _run("lakehouse_presets.py")
    documents = _handbook()
    assert out.startswith("index: 16 chunks of 6 documents, lexical-hash-2048 (index_version lh-")
    for name, meta in documents.items():
        assert f"  {name}: " in out
        assert f"label {meta['title']!r}" in out  # every row carries a citation label
    for twin in TWINS:
        assert f"rows checked under {twin}: pass (unchanged)\n" in out
    assert "under SOURCE_PAGE_POLICY_V2 itself: NO_EVIDENCE (the best row scores 0.59, " in out
    assert (
        "under SOURCE_PAGE_POLICY_V1_LEXICAL (ruleset source_page_v1): FAILED UNSAFE_OUTPUT "
        "(its marker names crane-slew-bearing.md, a host name to a linkifier)\n"
    ) in out

    ids = {str(meta["knowledge_id"]) for meta in documents.values()}
    pages = {f"Source: {name}, p.1" for name in documents}
    for twin, (marker, refusal) in TWINS.items():
        block = out.split(f"\npolicy: {twin} ")[1].split("\npolicy: ")[0]
        assert block.count("status: OK") == 2
        answers = _answers(block)
        assert len(answers) == 2
        cited: list[str] = []
        for line in [line for answer in answers for line in answer]:
            assert re.search(rf"(?: {marker})+$", line), line
            cited += re.findall(marker, line)
        if twin.startswith("SOURCE_PAGE"):
            assert set(cited) <= pages
            assert "Source: tug7-hpu-maintenance.md, p.1" in cited
            assert "Source: crane-slew-bearing.md, p.1" in cited
        elif twin.startswith("SEMANTIC_ID"):
            assert {anchor.rsplit("_", 1)[0] for anchor in cited} <= ids
            assert {"MM-TUG7-HPU-04_2", "MM-STS2-SLEW-02_2"} <= set(cited)
        else:
            assert set(cited) == {"CIT-01", "CIT-02", "CIT-03"}
        assert "500 operating hours" in answers[0][0]
        assert "1,250 Nm" in answers[1][0]
        unanswerable = "question: What colour is the harbour master's cat?\n"
        assert f"{unanswerable}status: NO_EVIDENCE\nanswer: {refusal}\n" in block
