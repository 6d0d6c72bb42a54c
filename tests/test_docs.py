"""Code in the README runs, and prints what its comments say it prints."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
_PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
_PRINT_WITH_EXPECTATION = re.compile(r"^print\(.*\)\s+# (.+)$", re.MULTILINE)


def test_readme_python_examples_print_what_their_comments_promise(monkeypatch, capsys):
    blocks = _PYTHON_BLOCK.findall(README)
    assert blocks, "the README should show how to use groundlock"
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102
    printed = capsys.readouterr().out
    expectations = [
        m.removesuffix("...").strip() for b in blocks for m in _PRINT_WITH_EXPECTATION.findall(b)
    ]
    assert len(expectations) >= 4
    for expected in expectations:
        assert expected in printed, expected


@pytest.mark.parametrize("fragment", ["python -m pytest", "-c constraints.txt -e '.[dev]'"])
def test_readme_and_ci_use_the_same_install_and_test_commands(fragment: str):
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert fragment in README
    assert fragment in ci
    assert os.access(ROOT / ".ci" / "run", os.X_OK)
