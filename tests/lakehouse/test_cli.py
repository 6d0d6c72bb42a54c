"""``groundlock index`` and ``groundlock ask QUESTION --index``: output and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundlock.cli import main
from tests.lakehouse.pdf import make_pdf


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


def test_ask_answers_as_a_principal_under_an_access_policy(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    index = str(tmp_path / "idx")
    assert _run(capsys, "index", str(corpus), "--index", index)[0] == 0
    access = tmp_path / "access.json"
    access.write_text(
        json.dumps(
            {
                "attributes": ["business_unit"],
                "levels": {"sensitivity_level": ["PUBLIC", "INTERNAL", "CONFIDENTIAL"]},
                "roles": {"crane": {"business_unit": "TERMINAL", "sensitivity_level": "INTERNAL"}},
            }
        )
    )
    question = "What torque do the slew bearing bolts of the crane need?"
    ask = ["ask", question, "--index", index, "--access", str(access), "--json"]
    # The crane manual is TERMINAL: a MARINE principal never sees it, a crane role does.
    code, out, _ = _run(capsys, *ask, "--grant", "business_unit=MARINE",
                        "--grant", "sensitivity_level=CONFIDENTIAL")  # fmt: skip
    assert (code, json.loads(out)["status"]) == (0, "NO_EVIDENCE")
    code, out, _ = _run(capsys, *ask, "--role", "crane")
    response = json.loads(out)
    assert (code, response["status"]) == (0, "OK")
    assert "1,250 Nm" in response["answer"]
    # Two units granted at once, as a comma list.
    code, out, _ = _run(capsys, *ask, "--grant", "business_unit=MARINE,TERMINAL",
                        "--grant", "sensitivity_level=INTERNAL")  # fmt: skip
    assert json.loads(out)["status"] == "OK"
    # An access policy and no one named: refused as a served request would be.
    code, out, _ = _run(capsys, *ask)
    response = json.loads(out)
    assert (code, response["status"], response["failure_reason"]) == (
        1,
        "FAILED",
        "PRINCIPAL_UNRESOLVED",
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--role", "crane"], "--role and --grant need --access FILE"),
        (["--access", "ACCESS", "--grant", "business_unit"], "expected KEY=VALUE"),
        (["--access", "ACCESS", "--role", "x", "--grant", "a=b"], "not both"),
        (["--access", "MISSING"], "cannot read"),
        (["--access", "BAD"], "not an access policy: attributes"),
    ],
)
def test_ask_access_usage_errors_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
):
    (tmp_path / "access.json").write_text('{"attributes": ["business_unit"]}')
    (tmp_path / "bad.json").write_text('{"attributes": "business_unit"}')
    paths = {
        "ACCESS": str(tmp_path / "access.json"),
        "MISSING": str(tmp_path / "missing.json"),
        "BAD": str(tmp_path / "bad.json"),
    }
    argv = [paths.get(arg, arg) for arg in extra]
    code, _, err = _run(capsys, "ask", "q?", "--index", str(tmp_path / "idx"), *argv)
    assert code == 2
    assert message in err


def test_ask_answers_from_a_pdf_page_and_cites_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    pytest.importorskip("pypdf")
    source = tmp_path / "pdfs"
    source.mkdir()
    (source / "hpu.pdf").write_bytes(
        make_pdf(
            [
                "The fuel tank of the tug holds 400 litres of diesel.",
                "The relief valve of the hydraulic pump is set to 210 bar at idle.",
            ]
        )
    )
    (source / "hpu.pdf.yaml").write_text(
        "knowledge_id: MM-HPU-RELIEF\nknowledge_type: MAINTENANCE_PROCEDURE\n"
    )
    index = str(tmp_path / "idx")
    assert _run(capsys, "index", str(source), "--index", index)[0] == 0
    question = "What is the relief valve of the hydraulic pump set to?"
    code, out, _ = _run(capsys, "ask", question, "--index", index, "--json")
    response = json.loads(out)
    assert (code, response["status"]) == (0, "OK")
    assert "210 bar" in response["answer"]
    assert [(c["knowledge_id"], c["page"]) for c in response["citations"]] == [("MM-HPU-RELIEF", 2)]
