"""What a new user meets first (issue 28, part): the version, ``python -m groundlock``, and a
listing piped into ``head`` ending quietly. Real processes, a real Delta store."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from groundlock import DeltaAuditStore, grounded_answer_chain
from groundlock._version import __version__
from groundlock.cli import main
from groundlock.lakehouse import LexicalEmbeddings, index_documents
from tests.builders import make_bundle

GROUNDLOCK = str(Path(sys.executable).with_name("groundlock"))


@pytest.mark.slow
def test_the_version_answers_from_the_script_and_from_python_dash_m() -> None:
    for command in ([GROUNDLOCK, "--version"], [sys.executable, "-m", "groundlock", "--version"]):
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == f"groundlock {__version__}"


@pytest.mark.slow
def test_a_listing_whose_reader_went_away_ends_quietly(tmp_path: Path) -> None:
    # ``records list | head``: the reader closes the pipe before the listing is written.
    store = DeltaAuditStore(tmp_path / "audit")
    chain = grounded_answer_chain(store=store)
    for number in range(3):
        chain.invoke(make_bundle(request_id=f"piped-{number}"))
    store.close()
    listing = subprocess.Popen(
        [GROUNDLOCK, "records", "list", "--store", str(tmp_path / "audit")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert listing.stdout is not None
    listing.stdout.close()  # gone before a byte is read
    _, errors = listing.communicate(timeout=120)
    assert listing.returncode == 0
    assert errors == b""


def _help_of(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main([*argv, "--help"]) == 0
    return capsys.readouterr().out


def test_every_help_is_plain_text(capsys: pytest.CaptureFixture[str]) -> None:
    # Descriptions come from reST docstrings: ``groundlock`` and :mod:`~x.y` showed raw.
    commands = [[], ["ask"], ["validate"], ["serve"], ["index"], ["records"],
                ["records", "list"], ["records", "show"], ["records", "vacuum"], ["feedback"],
                ["report"], ["replay"], ["eval"]]  # fmt: skip
    for argv in commands:
        text = _help_of(argv, capsys)
        assert "``" not in text, argv
        assert not re.search(r":[a-z]+:`", text), argv
    assert "The groundlock command" in _help_of([], capsys)


def test_the_eval_usage_reads_as_its_three_forms(capsys: pytest.CaptureFixture[str]) -> None:
    # argparse printed the "+" positional as "X [X ...]": "[DATASET | review ... ...]".
    usage = _help_of(["eval"], capsys).split("\n\n")[0]
    assert "[DATASET" not in usage
    assert "..." not in usage
    assert [line.split()[2] for line in usage.splitlines()[1:]] == ["review", "compare"]


BUNDLE = Path(__file__).parents[2] / "examples" / "data" / "hydraulic_pump_bundle.json"


@pytest.mark.slow
def test_a_shell_user_archives_and_replays_without_python(tmp_path: Path) -> None:
    # Separate processes, as in a shell: each ask commits its rows as it exits.
    store, archive = str(tmp_path / "audit"), str(tmp_path / "evidence")
    lines = tmp_path / "bundles.jsonl"
    bundle = json.loads(BUNDLE.read_text(encoding="utf-8"))
    lines.write_text(
        "".join(json.dumps({**bundle, "request_id": f"b{i}"}) + "\n" for i in range(2)),
        encoding="utf-8",
    )
    index = tmp_path / "index"
    index_documents(BUNDLE.parents[1] / "handbook" / "docs", index, LexicalEmbeddings())
    question = "How often is the case drain filter of the hydraulic pump replaced?"
    sources = (
        ["--bundle", str(BUNDLE)],
        ["--batch", str(lines)],
        [question, "--index", str(index)],
    )
    for source in sources:
        asked = _groundlock("ask", *source, "--store", store, "--archive", archive)
        assert asked.returncode == 0, asked.stderr
    replayed = _groundlock("replay", "--archive", archive, "--store", store, "--json")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    result = json.loads(replayed.stdout)
    assert result["cross_checked"] is True
    assert result["replayed"] == 4
    # An archive is written with the trail, never alone.
    alone = _groundlock("ask", "--bundle", str(BUNDLE), "--archive", archive)
    assert alone.returncode == 2
    assert "--archive needs --store" in alone.stderr


def _groundlock(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [GROUNDLOCK, *argv], capture_output=True, text=True, timeout=120, check=False
    )
