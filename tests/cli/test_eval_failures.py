"""``groundlock eval`` names the items that did not pass, and why (issue 28, part).

A gold set of four items over the handbook's real index: one that passes, one whose
expected chunk is not cited, one answerable question the index cannot answer, and one
unanswerable question. Through the real command, in text and ``--json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundlock.cli import main
from groundlock.lakehouse import LexicalEmbeddings, index_documents

ROOT = Path(__file__).parents[2]
GOLD = ROOT / "examples" / "handbook" / "gold.jsonl"
HANDBOOK = ROOT / "examples" / "handbook" / "docs"


@pytest.fixture(scope="module")
def gold(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("eval")
    index_documents(HANDBOOK, root / "index", LexicalEmbeddings())
    first = json.loads(GOLD.read_text(encoding="utf-8").splitlines()[0])
    items = [
        first,
        {**first, "id": "wrong-chunk", "expected_citations": ["no-such-chunk.md#9"]},
        {**first, "id": "off-topic", "question": "Who painted the Mona Lisa?"},
        {**first, "id": "should-refuse", "answerable": False, "expected_citations": []},
    ]
    path = root / "gold.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path, root / "index"


def test_the_items_that_did_not_pass_are_named_with_why(
    gold: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path, index = gold
    assert main(["eval", str(path), "--index", str(index), "--run-id", "r"]) == 0
    out = capsys.readouterr().out
    assert "3 item(s) did not pass:" in out
    assert "  wrong-chunk: answered without citing no-such-chunk.md#9" in out
    assert "  off-topic: answerable, but ended NO_EVIDENCE" in out
    assert "  should-refuse: not answerable, so it should have been refused, but ended OK" in out
    assert "g01:" not in out
    assert main(["eval", str(path), "--index", str(index), "--run-id", "r", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [run["run_id"] for run in document["runs"]] == ["r"]
    assert [(f["item_id"], f["why"].split(",")[0]) for f in document["failed"]] == [
        ("wrong-chunk", "answered without citing no-such-chunk.md#9"),
        ("off-topic", "answerable"),
        ("should-refuse", "not answerable"),
    ]
