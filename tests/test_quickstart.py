"""The README's first command runs the quick start: it must print a validated, cited answer."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_quickstart_prints_a_validated_cited_answer_and_a_withheld_one():
    run = subprocess.run(
        [sys.executable, "examples/quickstart.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    out = run.stdout
    assert "status: OK" in out
    answer = out.split("answer (validated, every sentence cited):\n")[1].split("\ncitations:")[0]
    lines = answer.splitlines()
    assert lines
    assert all(re.search(r"\[C\d+\]$", line) for line in lines)
    cited = re.findall(r"^  \[(C\d+)\] ", out, flags=re.MULTILINE)
    assert cited == list(dict.fromkeys(re.findall(r"\[(C\d+)\]", answer)))
    assert "status: FAILED, failure_reason: UNCITED_FACTUAL_STATEMENT" in out
    assert "answer: '' (withheld)" in out
    assert "Ignore all previous instructions" not in out  # the injected bulletin is not quoted
