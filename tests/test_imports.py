"""Starting is cheap: ``import groundlock`` and the command line's help load no heavy stack.

Each check runs in a fresh interpreter (this one has loaded everything long ago) and
reads which top-level modules the code left in ``sys.modules``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import groundlock

ROOT = Path(groundlock.__file__).parent.parent
HEAVY = (
    "openai",
    "langchain_openai",
    "langsmith",
    "deltalake",
    "arro3",
    "numpy",
    "fastapi",
    "langserve",
    "uvicorn",
    "rich",
    "pyspark",
    "pypdf",
)
"""Provider SDKs, tracing, delta-rs and Arrow, the web stack, Spark, PDF: loaded on first use."""


def _last_json_line(code: str) -> list[str]:
    """Run ``code`` in a fresh interpreter (this checkout first on the path); its last line."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def _loaded_after(code: str) -> list[str]:
    """The heavy top-level modules a fresh interpreter holds after running ``code``."""
    probe = (
        f"{code}\nimport json, sys\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r})))"
    )
    return _last_json_line(probe)


def test_importing_the_package_loads_no_heavy_module() -> None:
    assert _loaded_after("import groundlock") == []


def test_reading_a_light_public_name_loads_no_heavy_module() -> None:
    assert _loaded_after("from groundlock import RetrievalBundle, __version__, load_policy") == []


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["--version"],
        ["no-such-command"],
        ["ask", "--no-such-option"],
        ["records", "--help"],
    ],
    ids=["help", "version", "unknown-command", "unknown-option", "command-help"],
)
def test_the_command_line_answers_help_and_usage_errors_without_a_heavy_module(
    argv: list[str],
) -> None:
    code = (
        "import contextlib, io\n"
        "from groundlock.cli import main\n"
        "quiet = io.StringIO()\n"
        "with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):\n"
        "    try:\n"
        f"        main({argv!r})\n"
        "    except SystemExit:\n"
        "        pass\n"
    )
    assert _loaded_after(code) == []


_HELP_ARGV = (["--help"], ["--version"], ["no-such-command"], ["ask", "--no-such-option"])
_MOST_MODULES_FOR_HELP = 20
"""groundlock modules ``groundlock --help`` may load: 15 today (the command modules, the
serving limits and store locations their options name); a handler's import would add dozens."""


def _groundlock_modules_after(argv: list[str]) -> list[str]:
    """The ``groundlock`` modules a fresh interpreter holds after ``main(argv)``."""
    code = (
        "import contextlib, io, json, sys\n"
        "from groundlock.cli import main\n"
        "quiet = io.StringIO()\n"
        "with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):\n"
        f"    main({argv!r})\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('groundlock', 'pydantic'))))\n"
    )
    return _last_json_line(code)


@pytest.mark.parametrize("argv", _HELP_ARGV, ids=["help", "version", "command", "option"])
def test_help_and_usage_errors_load_no_contract_model_firewall_or_row_reader(
    argv: list[str],
) -> None:
    loaded = _groundlock_modules_after(argv)
    refused = ("groundlock.contracts", "groundlock.core", "groundlock.stores.readers")
    assert [m for m in loaded if m.startswith(refused)] == []
    # Not pydantic itself either: the parsers take the policy names from the folder.
    assert [m for m in loaded if m.split(".")[0] == "pydantic"] == []


def test_help_loads_only_a_few_groundlock_modules() -> None:
    assert len(_groundlock_modules_after(["--help"])) < _MOST_MODULES_FOR_HELP


def test_a_name_read_from_the_package_still_builds_and_runs_the_chain() -> None:
    code = (
        "from groundlock import PublicResponse, grounded_answer_chain\n"
        "from tests.builders import sample_bundle\n"
        "response = grounded_answer_chain().invoke(sample_bundle())\n"
        "assert isinstance(response, PublicResponse), response\n"
        "assert response.citations, response\n"
    )
    # What the chain needs loads now; the default (offline) model needs no provider SDK.
    assert "openai" not in _loaded_after(code)


def test_every_public_name_is_listed_by_dir() -> None:
    assert set(groundlock.__all__) <= set(dir(groundlock))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        groundlock.no_such_name  # noqa: B018  (the read is the test)
