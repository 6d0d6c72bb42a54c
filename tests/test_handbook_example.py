"""The retrieval example indexes a folder and answers as two principals, end to end."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


def _answers(out: str) -> dict[str, str]:
    body = out.split("\n\n", 1)[1].split("audit trail", maxsplit=1)[0]
    blocks = re.split(r"\n(?=q\d as )", body)
    return {block.split(" ", 1)[0]: block for block in blocks if block.strip()}


@pytest.mark.slow
def test_the_handbook_example_answers_and_withholds_by_principal() -> None:
    run = subprocess.run(
        [sys.executable, "examples/handbook_qa.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=180, check=True,
    )  # fmt: skip
    out = run.stdout
    assert out.startswith("indexed 16 paragraphs from 6 documents")
    answers = _answers(out)
    assert sorted(answers) == ["q1", "q2", "q3", "q4"]

    assert "status: OK" in answers["q1"]
    assert "replaced every 500 operating hours. [C0]" in answers["q1"]
    assert "[C0] Tug 7 maintenance manual, ch. 4 (hydraulic power unit), para. 2" in answers["q1"]
    # The technician asks what only the confidential report answers: a refusal, not a leak.
    assert "status: NO_EVIDENCE" in answers["q2"]
    assert "status: OK" in answers["q3"]
    assert "1,400 operating hours" in answers["q3"]
    assert "Failure investigation FR-2026-017" in answers["q3"]
    # The crane belongs to another business unit.
    assert "status: NO_EVIDENCE" in answers["q4"]
    for technician in ("q1", "q2", "q4"):
        assert "1,400" not in answers[technician]
        assert "FR-2026-017" not in answers[technician]
    assert "750" not in out  # the untagged draft is never shown to anyone

    audit = dict(re.findall(r"^  (q\d): (.*)$", out, flags=re.MULTILINE))
    assert audit["q1"].startswith("OK,")
    assert "6 withheld" in audit["q2"]  # 3 confidential, 2 terminal, 1 untagged paragraph
    assert "1 withheld" in audit["q3"]  # the investigator is only denied the untagged draft
    assert all("scores by cosine" in line for line in audit.values())
