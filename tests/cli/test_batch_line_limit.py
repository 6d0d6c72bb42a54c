"""``ask --batch``: a line over the limit is never held whole, and is one FAILED request.

Before, a line was read whole (``for line in file``) and then parsed: a line of a few
hundred megabytes took that memory, and more to decode. Now a line longer than
``--max-line-bytes`` (4 MiB by default, the body a served request may have) is read past in
pieces and answered FAILED ``INPUT_LIMIT_EXCEEDED`` under its line's id, with one output
line and one audit record like any other line the intake refuses. Through the real command
in a process of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from groundlock.cli import main
from groundlock.contracts.audit_rows import QueryRow, ValidationRow
from groundlock.stores import DeltaAuditStore
from tests.builders import make_bundle

LIMIT = 4 * 2**20
PAD = b'{"request_id": "big-1", "pad": "'


def _over_long(size: int) -> bytes:
    """A JSON object line of ``size`` bytes, newline not counted, with a request id."""
    return PAD + b"x" * (size - len(PAD) - 2) + b'"}'


def _command(*options: str) -> list[str]:
    return [sys.executable, "-m", "groundlock.cli", "ask", "--json", "--run-id", "job", *options]


@pytest.mark.slow
def test_an_over_long_line_is_one_failed_output_line_and_one_audit_record(tmp_path: Path):
    batch, store = tmp_path / "bundles.jsonl", tmp_path / "audit"
    lines = [
        json.dumps(make_bundle(request_id="ok-1")).encode(),
        _over_long(LIMIT + 1),
        json.dumps(make_bundle(request_id="ok-3")).encode(),
    ]
    batch.write_bytes(b"".join(line + b"\n" for line in lines))
    done = subprocess.run(
        [*_command("--batch", str(batch), "--store", str(store))],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    records: list[dict[str, Any]] = [json.loads(line) for line in done.stdout.splitlines()]
    # Before: read whole, parsed, and refused as INPUT_SCHEMA_INVALID under big-1.
    assert [(r["line"], r["request_id"], r["status"], r["failure_reason"]) for r in records] == [
        (1, "ok-1", "OK", None),
        (2, "job:line-2", "FAILED", "INPUT_LIMIT_EXCEEDED"),
        (3, "ok-3", "OK", None),
    ]
    assert f"bundles.jsonl:2: longer than the limit of {LIMIT:,} bytes; FAILED as job:line-2" in (
        done.stderr
    )
    audit = DeltaAuditStore(store)
    try:
        validations = {row.request_id: row for row in audit.select(ValidationRow)}
        queries = audit.select(QueryRow)
    finally:
        audit.close()
    assert sorted(validations) == ["job:line-2", "ok-1", "ok-3"]
    assert len(queries) == 3
    row = validations["job:line-2"]
    assert (row.status, row.failure_reason, row.run_id) == (
        "FAILED", "INPUT_LIMIT_EXCEEDED", "job",
    )  # fmt: skip
    assert row.message == f"line 2: longer than the limit of {LIMIT:,} bytes"


def test_a_line_at_the_limit_is_read_and_one_past_it_is_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    bundle = json.dumps(make_bundle(request_id="at-limit")).encode()
    batch = tmp_path / "bundles.jsonl"
    # The limit counts a line's bytes without its newline; the last line has none.
    batch.write_bytes(bundle + b"\n" + bundle + b" \n" + bundle + b"\r\n" + bundle + b"  ")
    limit = str(len(bundle))
    code = main(
        ["ask", "--batch", str(batch), "--json", "--run-id", "job", "--max-line-bytes", limit]
    )
    out, _ = capsys.readouterr()
    assert code == 1
    assert [(r["request_id"], r["failure_reason"]) for r in map(json.loads, out.splitlines())] == [
        ("at-limit", None),
        ("job:line-2", "INPUT_LIMIT_EXCEEDED"),
        ("job:line-3", "INPUT_LIMIT_EXCEEDED"),  # a carriage return is one byte more
        ("job:line-4", "INPUT_LIMIT_EXCEEDED"),
    ]


@pytest.mark.parametrize("value", ["0", "-1", str(2**30 + 1)])
def test_a_line_limit_out_of_range_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
):
    batch = tmp_path / "bundles.jsonl"
    batch.write_text(json.dumps(make_bundle()) + "\n", "utf-8")
    assert main(["ask", "--batch", str(batch), "--max-line-bytes", value]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "--max-line-bytes must be between 1 and 1,073,741,824" in err


def _peak_kib(megabytes: int) -> tuple[int, list[dict[str, Any]]]:
    """Peak resident memory (KiB) of a batch run, a line of ``megabytes`` MiB in the middle.

    Streamed through a pipe, so the test writes nothing to disk.
    """
    with subprocess.Popen(
        _command("--batch", "/dev/stdin"),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    ) as child:  # fmt: skip
        assert child.stdin is not None
        assert child.stdout is not None
        child.stdin.write(json.dumps(make_bundle(request_id="ok-1")).encode() + b"\n")
        if megabytes:
            child.stdin.write(PAD)
            block = b"x" * 2**20
            for _ in range(megabytes):
                child.stdin.write(block)
            child.stdin.write(b'"}\n')
        child.stdin.write(json.dumps(make_bundle(request_id="ok-3")).encode() + b"\n")
        child.stdin.close()
        out = child.stdout.read()
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)  # (reaped here, not again)
    assert child.returncode == (1 if megabytes else 0)  # (the long line FAILED)
    return usage.ru_maxrss, [json.loads(line) for line in out.splitlines()]


@pytest.mark.skipif(not Path("/dev/stdin").exists(), reason="needs /dev/stdin")
@pytest.mark.slow
def test_a_line_of_256_mib_is_answered_in_the_memory_of_a_small_batch():
    baseline, _ = _peak_kib(0)
    peak, records = _peak_kib(256)
    assert [r["failure_reason"] for r in records] == [None, "INPUT_LIMIT_EXCEEDED", None]
    # Before: the line was held whole, then decoded: 500 MiB and more above the baseline.
    assert peak - baseline < 64 * 1024, (baseline, peak)
