"""``groundlock ask`` and ``groundlock validate``: every exit code (002's convention)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from groundlock import load_policy
from groundlock.cli import main
from tests.builders import SAMPLE_BUNDLE_PATH, make_bundle, make_row, sample_bundle

REFUSAL_BUNDLE = make_bundle([make_row(0, similarity=0.01)], request_id="refused")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _write(tmp_path: Path, name: str, value: Any) -> str:
    path = tmp_path / name
    path.write_text(value if isinstance(value, str) else json.dumps(value), encoding="utf-8")
    return str(path)


def test_ask_prints_the_answer_with_numbered_citations(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "ask", "--bundle", str(SAMPLE_BUNDLE_PATH))
    assert code == 0
    assert "Case drain pressure must not exceed 3.5 bar at 1,800 rpm. [C1]" in out
    assert "  1. [C0] AMM-29-11-00 (Tug AMM 29-11-00, p. 14" in out
    # then 002's block: the sample cites three of its four admitted entries
    assert out.splitlines()[-3:] == [
        "Grounded: yes (OK)",
        "Citations: 3",
        "Retrieved ids (4): C0, C1, C2, C3",
    ]


def test_ask_json_reads_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(sample_bundle())))
    code, out, _ = _run(capsys, "ask", "--json")
    response = json.loads(out)
    assert code == 0
    assert response["status"] == "OK"
    assert [c["anchor"] for c in response["citations"]] == ["C0", "C1", "C3"]


def test_ask_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(capsys, "ask", "--bundle", _write(tmp_path, "refused.json", REFUSAL_BUNDLE))[0] == 0
    code, out, _ = _run(capsys, "ask", "--bundle", _write(tmp_path, "bad.json", {"request_id": 1}))
    assert code == 1
    assert out.startswith("FAILED INPUT_SCHEMA_INVALID")
    assert out.splitlines()[1:] == []  # nothing was judged: no verdict block
    assert _run(capsys, "ask", "--bundle", str(tmp_path / "missing.json"))[0] == 2
    assert _run(capsys, "ask", "--bundle", _write(tmp_path, "x.json", "{not json"))[0] == 2
    assert _run(capsys, "ask", "--model", "nosuchprovider:model", "--bundle",
                str(SAMPLE_BUNDLE_PATH))[0] == 2  # fmt: skip
    assert _run(capsys, "ask", "--policy", "NO_SUCH_POLICY", "--bundle",
                str(SAMPLE_BUNDLE_PATH))[0] == 2  # fmt: skip
    assert _run(capsys, "ask", "--frobnicate")[0] == 2


def test_ask_batch_summarises_statuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [json.dumps(make_bundle(request_id=f"b{i}")) for i in range(5)]
    lines += [json.dumps(REFUSAL_BUNDLE), json.dumps({"request_id": "broken"}), ""]
    code, out, err = _run(capsys, "ask", "--batch", _write(tmp_path, "b.jsonl", "\n".join(lines)),
                          "--json", "--concurrency", "3")  # fmt: skip
    statuses = [json.loads(line)["status"] for line in out.splitlines()]
    assert code == 1  # one request FAILED
    assert statuses == ["OK"] * 5 + ["NO_EVIDENCE", "FAILED"]  # in input order
    assert "total: 7 requests" in err
    assert "INPUT_SCHEMA_INVALID" in err
    assert "latency (s): p50" in err
    # A line that is not JSON fails alone (exit 1), not the whole file.
    code, out, _ = _run(capsys, "ask", "--batch", _write(tmp_path, "c.jsonl", "{oops\n"), "--json")
    assert code == 1
    assert json.loads(out)["failure_message"] == "line 1: not JSON"


def test_validate_judges_an_existing_answer_without_a_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = str(SAMPLE_BUNDLE_PATH)
    good = _write(
        tmp_path, "good.txt", "Case drain pressure must not exceed 3.5 bar at 1,800 rpm. [C1]"
    )
    code, out, _ = _run(capsys, "validate", "--json", "--bundle", bundle, "--answer-file", good)
    verdict = json.loads(out)
    assert code == 0
    assert verdict["validation_status"] == "PASSED"
    assert verdict["validated_citations"] == ["C1"]
    assert verdict["grounding_metrics"]["citation_count"] == 1
    bad = _write(tmp_path, "bad.txt", "The pump is fine. [C1] Replace it weekly.")
    code, out, _ = _run(capsys, "validate", "--json", "--bundle", bundle, "--answer-file", bad)
    assert code == 1
    assert json.loads(out)["failure_reason"] == "UNCITED_FACTUAL_STATEMENT"
    missing = str(tmp_path / "none.txt")
    assert _run(capsys, "validate", "--json", "--bundle", bundle, "--answer-file", missing)[0] == 2
    assert _run(capsys, "validate", "--json", "--bundle", bundle)[0] == 2


def test_validate_judges_the_given_answer_even_when_the_bundle_has_no_evidence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # It used to replay the answer through the chain, where a bundle without evidence never
    # reaches a model: the refusal was judged instead, and any answer passed.
    empty = _write(tmp_path, "empty.json", make_bundle([], retrieval_status="NO_EVIDENCE"))
    claim = _write(tmp_path, "claim.txt", "The pump never needs an inspection. [C0]")
    code, out, _ = _run(capsys, "validate", "--json", "--bundle", empty, "--answer-file", claim)
    assert (code, json.loads(out)["failure_reason"]) == (1, "INVALID_REFUSAL_FORMAT")
    refusal = _write(tmp_path, "refusal.txt", load_policy().refusal_text)
    code, out, _ = _run(capsys, "validate", "--json", "--bundle", empty, "--answer-file", refusal)
    assert (code, json.loads(out)["generation_status"]) == (0, "NO_EVIDENCE")


def test_validate_reads_the_json_that_ask_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = str(SAMPLE_BUNDLE_PATH)
    code, printed, _ = _run(capsys, "ask", "--json", "--bundle", bundle)
    assert code == 0
    response = _write(tmp_path, "response.json", printed)
    code, out, _ = _run(capsys, "validate", "--json", "--bundle", bundle, "--answer-file", response)
    verdict = json.loads(out)
    assert (code, verdict["validation_status"]) == (0, "PASSED")
    assert verdict["validated_citations"] == [c["anchor"] for c in json.loads(printed)["citations"]]
    # a plain answer that happens to be JSON without an answer field is judged as written
    braces = _write(tmp_path, "braces.txt", '{"note": "see manual"}')
    code, out, _ = _run(capsys, "validate", "--json", "--bundle", bundle, "--answer-file", braces)
    assert (code, json.loads(out)["failure_reason"]) == (1, "UNCITED_FACTUAL_STATEMENT")


def test_a_provider_that_cannot_be_built_is_a_usage_error_naming_the_cause(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_ADMIN_KEY", raising=False)
    code, out, err = _run(
        capsys, "ask", "--model", "openai:gpt-4.1-mini", "--bundle", str(SAMPLE_BUNDLE_PATH)
    )
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert "ProviderUnavailableError" in err
    assert "OPENAI_API_KEY" in err  # the cause, in the SDK's words
    code, _, err = _run(
        capsys, "ask", "--model", "anthropic:claude-x", "--bundle", str(SAMPLE_BUNDLE_PATH)
    )
    assert code == 2
    assert "integration package is not installed" in err


def test_the_library_raises_its_own_error_for_a_provider_without_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from groundlock import ProviderUnavailableError, grounded_answer_chain  # noqa: PLC0415

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_ADMIN_KEY", raising=False)
    with pytest.raises(ProviderUnavailableError, match="OpenAIError"):
        grounded_answer_chain(model="openai:gpt-4.1-mini")


def test_json_nested_too_deep_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # (In a --batch file the same line fails alone: tests/cli/test_batch.py.)
    deep = "[" * 100_000 + "]" * 100_000
    path = _write(tmp_path, "deep.json", deep)
    code, out, err = _run(capsys, "ask", "--bundle", path)
    assert (code, out) == (2, "")
    assert "is not JSON" in err
    assert "Traceback" not in err


PRESET_MARKERS = {
    "SEMANTIC_ID_POLICY_V1": ("[AMM_29_11_00_0]", "AMM_29_11_00_0"),
    "CIT_LABEL_POLICY_V1": ("[CIT-01]", "CIT-01"),
    "SOURCE_PAGE_POLICY_V1": (
        "[Source: Tug AMM 29-11-00.pdf, p.14]",
        "Source: Tug AMM 29-11-00.pdf, p.14",
    ),
    "SOURCE_PAGE_POLICY_V2": (
        "[Source: Tug AMM 29-11-00.pdf, p.14]",
        "Source: Tug AMM 29-11-00.pdf, p.14",
    ),
    "SEMANTIC_ID_POLICY_V2": ("[AMM_29_11_00_0]", "AMM_29_11_00_0"),
    "CIT_LABEL_POLICY_V2": ("[CIT-01]", "CIT-01"),
    "SOURCE_PAGE_POLICY_V3": (
        "[Source: Tug AMM 29-11-00.pdf, p.14]",
        "Source: Tug AMM 29-11-00.pdf, p.14",
    ),
}


@pytest.mark.parametrize("policy", sorted(PRESET_MARKERS))
def test_ask_and_validate_take_every_preset(
    policy: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both commands answer and judge in the preset's marker style, and agree on anchors."""
    data = sample_bundle()
    for rank, row in enumerate(data["results"]):
        row.update(
            semantic_id=f"AMM_29_11_00_{rank}",
            citation_label=f"Tug AMM 29-11-00 section {rank}",
            source_file="Tug AMM 29-11-00.pdf",
            page=14 + rank,
        )
    bundle = _write(tmp_path, "bundle.json", data)
    code, printed, _ = _run(capsys, "ask", "--json", "--policy", policy, "--bundle", bundle)
    response = json.loads(printed)
    marker, anchor = PRESET_MARKERS[policy]
    assert (code, response["status"]) == (0, "OK")
    assert marker in response["answer"]
    assert "[C0]" not in response["answer"]
    assert anchor in [c["anchor"] for c in response["citations"]]
    answer = _write(tmp_path, "response.json", printed)
    args = ("validate", "--json", "--policy", policy, "--bundle", bundle, "--answer-file", answer)
    code, out, _ = _run(capsys, *args)
    verdict = json.loads(out)
    assert (code, verdict["validation_status"]) == (0, "PASSED")
    assert verdict["validated_citations"] == [c["anchor"] for c in response["citations"]]
    # the same answer in the default grammar is not a citation under the preset
    plain = _write(tmp_path, "plain.txt", "Replace the filter element every 500 hours. [C0]")
    code, out, _ = _run(capsys, "validate", "--json", "--policy", policy, "--bundle", bundle,
                        "--answer-file", plain)  # fmt: skip
    assert (code, json.loads(out)["validation_status"]) == (1, "FAILED")
