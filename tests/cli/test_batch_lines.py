"""``ask --batch --store``: every non-blank line is one output line and one audit record.

The batch runs as an operator runs it, in a process of its own, so that what is counted is
what the Delta tables hold once the command has ended.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableLambda

from groundlock import grounded_answer_chain
from groundlock.cli import chain as chain_cli
from groundlock.cli import main
from groundlock.contracts.audit_rows import QueryRow, ValidationRow
from groundlock.stores import DeltaAuditStore
from tests.builders import make_bundle, make_row

LONG_QUESTION = "x" * 4001  # past every built-in policy's max_question_chars (4000)

# (line, the failure reason its output and its record show; None for an answer)
LINES: list[tuple[bytes, str | None]] = [
    (json.dumps(make_bundle(request_id="ok-1")).encode(), None),
    (b"{not json", "INPUT_SCHEMA_INVALID"),
    (b'{"request_id": "\xff\xfe"}', "INPUT_SCHEMA_INVALID"),  # not UTF-8
    (b"[" * 100_000 + b"]" * 100_000, "INPUT_SCHEMA_INVALID"),  # nested too deep
    (b"[1, 2]", "INPUT_SCHEMA_INVALID"),  # JSON, not an object
    (b"42", "INPUT_SCHEMA_INVALID"),
    (b'"a string"', "INPUT_SCHEMA_INVALID"),
    (b"null", "INPUT_SCHEMA_INVALID"),
    (b"{}", "INPUT_SCHEMA_INVALID"),  # an object with no request_id
    (json.dumps({**make_bundle(), "request_id": "bad [id]"}).encode(), "INPUT_SCHEMA_INVALID"),
    (json.dumps({"request_id": "schema-1"}).encode(), "INPUT_SCHEMA_INVALID"),  # has an id
    (json.dumps({"user_question": LONG_QUESTION}).encode(), "INPUT_LIMIT_EXCEEDED"),
    (
        json.dumps(make_bundle(request_id="long-1", user_question=LONG_QUESTION)).encode(),
        "INPUT_LIMIT_EXCEEDED",
    ),
    (b"", None),  # blank: skipped, and said so in the summary
    (b"\x0c", "INPUT_SCHEMA_INVALID"),  # a form feed is no JSON whitespace
    (
        json.dumps(make_bundle([make_row(0, similarity=0.01)], request_id="refused-1")).encode(),
        None,
    ),
]
REQUESTS = sum(1 for line, _ in LINES if line)


def _batch_file(tmp_path: Path) -> Path:
    path = tmp_path / "bundles.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line, _ in LINES))
    return path


def _ask_batch(batch: Path, store: Path, *options: str) -> tuple[list[dict[str, Any]], str]:
    """Run the batch in a process of its own; its output records and its stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "groundlock.cli", "ask", "--batch", str(batch), "--json",
         "--store", str(store), *options],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr  # some lines FAILED
    return [json.loads(line) for line in done.stdout.splitlines()], done.stderr


def _rows(store_path: Path) -> tuple[list[ValidationRow], list[QueryRow]]:
    store = DeltaAuditStore(store_path)
    try:
        return store.select(ValidationRow), store.select(QueryRow)
    finally:
        store.close()


@pytest.mark.slow
def test_every_line_is_one_output_line_and_one_audit_record(tmp_path: Path) -> None:
    store = tmp_path / "audit"
    records, err = _ask_batch(_batch_file(tmp_path), store)
    validations, queries = _rows(store)
    # 15 requests (and a blank line): on 070f10f, 15 output lines but 9 records
    assert (len(records), len(validations), len(queries)) == (REQUESTS, REQUESTS, REQUESTS)
    assert re.search(r"^total: 15 requests in .*blank lines skipped: 1$", err, re.MULTILINE)
    found = re.search(r"^run: (batch-[0-9a-f]{12})$", err, re.MULTILINE)
    assert found is not None
    run = found.group(1)
    numbers = [number for number, (line, _) in enumerate(LINES, start=1) if line]
    assert [r["line"] for r in records] == numbers
    assert [r["failure_reason"] for r in records] == [reason for line, reason in LINES if line]
    # A line with no usable request id of its own is answered and recorded under its line's.
    own = {1: "ok-1", 11: "schema-1", 13: "long-1", 16: "refused-1"}
    expected = [own.get(n, f"{run}:line-{n}") for n in numbers]
    assert [r["request_id"] for r in records] == expected
    # The record says what the output line says; no two lines share a key.
    for table in (validations, queries):
        by_id = {row.request_id: row for row in table}
        assert sorted(by_id, key=expected.index) == expected
        for record in records:
            row = by_id[record["request_id"]]
            assert (row.status, row.failure_reason) == (record["status"], record["failure_reason"])
    assert all(row.run_id == run for row in validations if row.request_id not in own.values())
    messages = {row.request_id: row.message for row in validations}
    assert messages[f"{run}:line-2"] == "line 2: not JSON"
    assert messages[f"{run}:line-3"] == "line 3: not UTF-8"
    assert messages[f"{run}:line-4"] == "line 4: not JSON (nested too deep)"
    assert messages[f"{run}:line-5"] == "bundle: expected a JSON object (mapping), got list"
    assert "Traceback" not in err


@pytest.mark.slow
def test_a_rerun_under_the_same_run_id_records_no_line_twice(tmp_path: Path) -> None:
    batch, store = _batch_file(tmp_path), tmp_path / "audit"
    first, _ = _ask_batch(batch, store, "--run-id", "nightly-7")
    again, _ = _ask_batch(batch, store, "--run-id", "nightly-7")
    validations, queries = _rows(store)
    assert [r["request_id"] for r in again] == [r["request_id"] for r in first]
    assert (len(validations), len(queries)) == (REQUESTS, REQUESTS)
    # Another run records its own lines again; the bundles keep their own keys.
    other, _ = _ask_batch(batch, store, "--run-id", "nightly-8")
    validations, queries = _rows(store)
    lines_own_ids = sum(1 for r in other if r["request_id"].startswith("nightly-8:line-"))
    assert lines_own_ids == 11
    assert (len(validations), len(queries)) == (REQUESTS + 11, REQUESTS + 11)


def test_a_line_the_chain_raises_on_is_answered_and_recorded_as_internal_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = DeltaAuditStore(tmp_path / "audit")

    def explode(payload: Any) -> Any:
        # A fault around the stages (they fail closed themselves): raises on one bundle.
        if isinstance(payload, dict) and payload.get("request_id") == "boom":
            raise RuntimeError("secret evidence text")
        return payload

    chain = RunnableLambda(explode) | grounded_answer_chain(store=store)
    monkeypatch.setattr(chain_cli, "_chain_for", lambda args: chain)
    batch = tmp_path / "bundles.jsonl"
    lines = [make_bundle(request_id=i) for i in ("a", "boom", "c")]
    batch.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
    code = main(["ask", "--batch", str(batch), "--json", "--run-id", "job"])
    out, err = capsys.readouterr()
    store.close()
    records = [json.loads(line) for line in out.splitlines()]
    assert code == 1
    assert [(r["request_id"], r["status"]) for r in records] == [
        ("a", "OK"),
        ("boom", "FAILED"),
        ("c", "OK"),
    ]
    assert records[1]["failure_reason"] == "INTERNAL_ERROR"
    assert records[1]["failure_message"] is None
    rows = {row.request_id: row for row in store.select(ValidationRow)}
    assert sorted(rows) == ["a", "boom", "c"]
    assert (rows["boom"].status, rows["boom"].failure_reason) == ("FAILED", "INTERNAL_ERROR")
    assert rows["boom"].message == "line 2: the chain raised RuntimeError"
    assert len(store.select(QueryRow)) == 3
    assert "bundles.jsonl:2: the chain raised RuntimeError" in err
    assert "secret evidence" not in out + err


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["--run-id", "a b [c]"], "--run-id must be 1 to 200 characters"),
        (["--run-id", "x" * 201], "--run-id must be 1 to 200 characters"),
        (["--run-id", "job\n2"], "--run-id must be 1 to 200 characters"),
        (["--run-id", ""], "--run-id must be 1 to 200 characters"),
    ],
)
def test_a_run_id_that_cannot_name_a_request_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], problem: str
) -> None:
    batch = tmp_path / "bundles.jsonl"
    batch.write_text(json.dumps(make_bundle()) + "\n", "utf-8")
    assert main(["ask", "--batch", str(batch), *argv]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert problem in err


def test_a_run_id_without_a_batch_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = tmp_path / "bundle.json"
    bundle.write_text(json.dumps(make_bundle()), "utf-8")
    assert main(["ask", "--bundle", str(bundle), "--run-id", "job"]) == 2
    assert "--run-id goes with --batch" in capsys.readouterr().err
