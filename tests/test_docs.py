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


def _first_bash_block(section: str) -> str:
    body = README.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```bash\n(.*?)\n```", body, re.DOTALL)
    assert found, f"no command under ## {section}"
    return found.group(1)


def test_the_quick_start_command_installs_the_base_only_and_runs_the_quick_start():
    command = _first_bash_block("Quick start")
    assert "\n" not in command  # one command
    assert "pip install -c constraints.txt -e . &&" in command
    assert "[dev]" not in command
    assert command.endswith(".venv/bin/python examples/quickstart.py")


def test_the_test_command_installs_dev_and_runs_the_suite():
    command = _first_bash_block("Run the tests")
    assert "\n" not in command
    assert "pip install -c constraints.txt -e '.[dev]' &&" in command
    assert command.endswith(".venv/bin/python -m pytest")


def test_ci_runs_the_readme_commands_as_written():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 'readme_command "Quick start"' in ci
    assert 'readme_command "Run the tests"' in ci
    assert 'bash -euo pipefail -c "$quick_start"' in ci
    assert 'bash -euo pipefail -c "$tests"' in ci
    assert os.access(ROOT / ".ci" / "run", os.X_OK)


def test_the_first_screen_is_short():
    """Quick start, tests and where to go next come first, within the first 50 lines."""
    headings = [line for line in README.splitlines()[:50] if line.startswith("## ")]
    assert headings[:3] == ["## Quick start", "## Run the tests", "## Where to go next"]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_every_link_within_the_readme_lands_on_a_heading():
    in_code = False
    anchors = set()
    for line in README.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            anchors.add(_slug(line.lstrip("#")))
    links = re.findall(r"\]\(#([^)]+)\)", README)
    assert len(links) >= 6
    assert sorted(set(links) - anchors) == []


def test_every_example_file_the_readme_names_exists():
    """A new user runs the README's commands from the repository root: the files must be there."""
    named = set(re.findall(r"examples/[\w./-]+\.(?:py|jsonl|json|txt|md)\b", README))
    assert len(named) >= 10
    assert sorted(path for path in named if not (ROOT / path).is_file()) == []


def test_the_shell_section_runs_on_shipped_files_only():
    shell = README.split("\n## From a shell\n", 1)[1].split("\n## ", 1)[0]
    commands = re.search(r"```bash\n(.*?)\n```", shell, re.DOTALL)
    assert commands
    for word in re.findall(r"[\w./-]+\.(?:json|jsonl|txt)\b", commands.group(1)):
        assert (ROOT / word).is_file(), word
