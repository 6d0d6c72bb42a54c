"""A location no table can have is refused before the command's work, exit 2 (issue 27).

``eval`` wrote its log only once every item was answered (seconds here, a real model's
cost elsewhere) and only then refused a ``--store`` it could never open; ``records show``
opened ``--archive`` only when it had a rejection to quote, so a bad one passed unnoticed;
``replay`` read ``--store`` after replaying every archived request; ``index`` read every
document before it looked at ``--index``. Each is now refused first, on one line, and a
bad store location is exit 2 in every command (``records`` and ``report`` gave exit 1).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableLambda

from groundlock import grounded_answer_chain
from groundlock.cli import main
from groundlock.lakehouse import EvalItem, LexicalEmbeddings, index_documents, run_eval
from tests.builders import make_bundle, make_row
from tests.cli.tampering import build_trail

ROOT = Path(__file__).parents[2]
GOLD = ROOT / "examples" / "handbook" / "gold.jsonl"
HANDBOOK = ROOT / "examples" / "handbook" / "docs"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real index, audit trail and evidence archive, shared by the tests (never written)."""
    root = tmp_path_factory.mktemp("located")
    index_documents(HANDBOOK, root / "index", LexicalEmbeddings())
    build_trail(root)
    return root


def _commands(root: Path, bad: str) -> dict[str, list[str]]:
    index, audit, archive = str(root / "index"), str(root / "audit"), str(root / "evidence")
    return {
        "eval --store": ["eval", str(GOLD), "--index", index, "--store", bad],
        "eval review --store": [
            "eval", "review", "run", "g01", "--status", "approved", "--reviewer", "ann",
            "--store", bad,
        ],
        "eval compare --store": ["eval", "compare", "a", "b", "--store", bad],
        "records show --archive": ["records", "show", "ok-0", "--store", audit, "--archive", bad],
        "replay --store": ["replay", "--archive", archive, "--store", bad],
        "records list --store": ["records", "list", "--store", bad],
        "report --store": ["report", "--store", bad, "--out", str(root / "report.html")],
        "index --index": ["index", str(HANDBOOK), "--index", bad],
        "ask --index --store": ["ask", "When is the filter replaced?", "--index", index,
                                "--store", bad],
    }  # fmt: skip


COMMANDS = sorted(_commands(Path("/unused"), "x"))


@pytest.mark.parametrize("name", ["log[1]", "log\tb"], ids=["bracket", "tab"])
@pytest.mark.parametrize("command", COMMANDS)
def test_a_location_no_table_can_have_is_a_usage_error_before_any_work(
    built: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    name: str,
) -> None:
    # Before: eval answered all 12 items and then failed (exit 1), show printed the record
    # (exit 0), replay replayed every request and then failed, index read every document.
    bad = str(tmp_path / "out" / name)
    code = main(_commands(built, bad)[command])
    out, err = capsys.readouterr()
    assert code == 2, err
    assert err.count("\n") == 1, err
    assert err.startswith(f"groundlock: error: {command.rsplit(maxsplit=1)[-1]}: {tmp_path}")
    assert out == ""
    assert not (tmp_path / "out").exists()


def test_run_eval_refuses_a_log_location_before_answering_an_item(tmp_path: Path) -> None:
    answered: list[object] = []

    def counted(bundle: dict[str, Any]) -> dict[str, Any]:
        answered.append(bundle)
        return bundle

    chain = RunnableLambda(counted) | grounded_answer_chain()
    bundle: dict[str, Any] = make_bundle([make_row(0)])
    del bundle["request_id"]
    items = [EvalItem(id="i-1", bundle=bundle, answerable=True)]
    with pytest.raises(ValueError, match="delta-rs cannot open this local path"):
        run_eval(items, chain, table_uri=tmp_path / "log[1]")
    assert answered == []
    assert not (tmp_path / "log[1]").exists()
