"""``examples/spark_backfill.py`` runs on a local Spark and prints what its docstring says."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.spark.conftest import ROOT, _spark_missing


@pytest.mark.spark
def test_the_backfill_example_answers_resumes_and_re_judges() -> None:
    missing = _spark_missing()
    if missing:
        if os.environ.get("GROUNDLOCK_REQUIRE_SPARK") == "1":
            pytest.fail(f"GROUNDLOCK_REQUIRE_SPARK=1 but {missing}")
        pytest.skip(missing)
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "spark_backfill.py")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines() == [
        "answered: {'OK': 200}",
        "re-run: 200 of 200 read back from the trail",
        "trail: 200 validation rows",
        "pump-000: unchanged",
        "pump-altered: PASSED -> FAILED UNSUPPORTED_VALUE",
    ]
