"""Code in the README runs, and each print shows exactly what its comment promises.

``print(x)  # text`` promises that the line printed is ``text`` (or starts with it when the
comment ends in ``...``). Comment lines directly under a bare ``print(x)`` promise the
printed lines, in order.
"""

from __future__ import annotations

import ast
import contextlib
import io
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
_PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def _promises(lines: list[str], statement: ast.stmt) -> list[str]:
    line = lines[statement.lineno - 1]
    if "  # " in line:
        return [line.split("  # ", 1)[1]]
    below = []
    for following in lines[statement.end_lineno or statement.lineno :]:
        if not following.startswith("# "):
            break
        below.append(following[2:])
    return below


def _matches(printed: str, promised: str) -> bool:
    if promised.endswith("..."):
        return printed.startswith(promised.removesuffix("...").rstrip())
    return printed == promised


def test_readme_python_examples_print_what_their_comments_promise(monkeypatch):
    blocks = _PYTHON_BLOCK.findall(README)
    assert blocks, "the README should show how to use groundlock"
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {}
    checked = 0
    for block in blocks:
        lines = block.splitlines()
        for statement in ast.parse(block).body:
            output = io.StringIO()
            with contextlib.redirect_stdout(output):
                exec(compile(ast.Module([statement], []), "README.md", "exec"), namespace)  # noqa: S102
            is_print = isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
            promised = _promises(lines, statement) if is_print else []
            printed = output.getvalue().splitlines()
            for index, expected in enumerate(promised):
                assert index < len(printed), f"nothing printed for: {expected}"
                assert _matches(printed[index], expected), (printed[index], expected)
                checked += 1
    assert checked >= 7


@pytest.mark.parametrize("fragment", ["python -m pytest", "-c constraints.txt -e '.[dev]'"])
def test_readme_and_ci_use_the_same_install_and_test_commands(fragment: str):
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert fragment in README
    assert fragment in ci
    assert os.access(ROOT / ".ci" / "run", os.X_OK)
