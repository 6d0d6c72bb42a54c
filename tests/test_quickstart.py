"""The README's first command runs the quick start: it must print a validated, cited answer."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


@pytest.mark.slow
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


# What `[dev]` adds over the base install (pyproject.toml's optional dependencies, and what
# they bring). The quick-start command installs only the base, so the quick start must run
# without any of these; a blocked import fails it the way a missing package would.
_DEV_ONLY = (
    "pytest", "hypothesis", "ruff", "mypy", "langchain_tests", "confusable_homoglyphs",
    "pyspark", "pyarrow", "pandas", "pypdf", "py4j",
)  # fmt: skip
_BLOCK_DEV_ONLY = f"""
import importlib.abc, runpy, sys

class DevOnly(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {_DEV_ONLY!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (not in the base install)")
        return None

sys.meta_path.insert(0, DevOnly())
sys.argv = ["examples/quickstart.py"]
runpy.run_path("examples/quickstart.py", run_name="__main__")
"""


def test_the_quick_start_needs_only_the_base_install():
    run = subprocess.run(
        [sys.executable, "-c", _BLOCK_DEV_ONLY],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert "status: OK" in run.stdout
    assert ", None, " not in run.stdout  # an undated citation says so, not "None"
    assert "(OM-CH3, undated, TUG-A320-07)" in run.stdout


def test_the_dev_only_blocker_would_catch_a_dev_import():
    probe = _BLOCK_DEV_ONLY.replace(
        'runpy.run_path("examples/quickstart.py", run_name="__main__")', "import pyarrow"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert run.returncode != 0
    assert "not in the base install" in run.stderr
