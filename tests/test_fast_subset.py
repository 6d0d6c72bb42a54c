"""The README's fast subset leaves out Spark, the browser, object stores and slow tests only."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
FAST = "not spark and not browser and not slow and not objectstore"


def _collected(marks: str) -> set[str]:
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-m", marks, "tests"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    return {line for line in run.stdout.splitlines() if "::" in line}


@pytest.mark.slow
def test_the_fast_subset_leaves_out_spark_the_browser_and_the_slow_tests():
    fast = _collected(FAST)
    files = {node.split("::")[0] for node in fast}
    assert "tests/spark/test_runner.py" not in files  # every test there takes the spark fixture
    assert "tests/spark/test_example.py" not in files  # runs Spark in a subprocess, marked
    assert "tests/cli/test_report_browser.py" not in files
    assert not any("test_a_batch_written_as_az_reads_back_as_abfs" in node for node in fast)
    assert not any("[s3]" in node or "[azure]" in node for node in fast)
    assert any("[local]" in node for node in fast)  # a backend-parametrized test stays, locally
    assert not any("test_the_cli_exits_cleanly_100_times" in node for node in fast)
    assert not any("test_mypy_strict_finds_nothing" in node for node in fast)
    # What is left is most of the suite, not an empty selection that passes by running nothing.
    assert "tests/spark/test_resume.py" in files  # no Spark needed: stays in
    assert len(fast) >= 2500
