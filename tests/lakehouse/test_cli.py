"""``groundlock index`` and ``groundlock ask QUESTION --index``: output and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundlock.cli import main


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_index_reports_what_it_wrote_and_writes_nothing_twice(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    index = str(tmp_path / "idx")
    code, out, _ = _run(capsys, "index", str(corpus), "--index", index)
    assert code == 0
    assert out.startswith("6 documents: 6 (re)indexed, 0 removed, 16 chunks written\n")
    code, out, _ = _run(capsys, "index", str(corpus), "--index", index, "--json")
    report = json.loads(out)
    assert code == 0
    assert report["changed"] == []
    assert report["chunks_written"] == 0
    assert (report["chunks_version"], report["embeddings_version"]) == (0, 0)


def test_index_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    code, _, err = _run(capsys, "index", str(tmp_path / "missing"), "--index", str(tmp_path))
    assert code == 2
    assert "no such file or folder" in err
    assert _run(capsys, "index", str(tmp_path))[0] == 2  # no --index


def test_ask_answers_a_question_from_the_index(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    index = str(tmp_path / "idx")
    assert _run(capsys, "index", str(corpus), "--index", index)[0] == 0
    question = "What torque do the slew bearing bolts of the crane need?"
    code, out, _ = _run(capsys, "ask", question, "--index", index, "--top-k", "4")
    assert code == 0
    assert "1,250 Nm" in out
    assert "1. [C0] MM-STS2-SLEW-02" in out
    code, out, _ = _run(capsys, "ask", question, "--index", index, "--json")
    response = json.loads(out)
    assert code == 0
    assert response["status"] == "OK"
    code, out, _ = _run(capsys, "ask", "What colour is the harbour master's cat?", "--index", index)
    assert code == 0
    assert out.startswith("NO_EVIDENCE")


def test_ask_refuses_a_policy_calibrated_for_another_embedding(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    index = str(tmp_path / "idx")
    _run(capsys, "index", str(corpus), "--index", index)
    code, _, err = _run(capsys, "ask", "Why?", "--index", index, "--policy", "R2_POLICY_V2")
    assert code == 2
    assert "--policy LEXICAL_POLICY_V1" in err
    code, out, _ = _run(
        capsys,
        "ask",
        "How often is the case drain filter replaced?",
        "--index",
        index,
        "--policy",
        "LEXICAL_POLICY_V1",
    )
    assert code == 0
    assert "500 operating hours" in out


def test_ask_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    code, _, err = _run(capsys, "ask", "A question without an index?")
    assert code == 2
    assert "needs --index" in err
    code, _, err = _run(capsys, "ask", "Anything?", "--index", str(tmp_path / "none"))
    assert code == 2
    assert "no lakehouse index" in err
    assert _run(capsys, "ask", "--index", str(tmp_path / "none"))[0] == 2  # no question
