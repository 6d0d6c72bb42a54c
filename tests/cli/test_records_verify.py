"""``groundlock records verify`` and ``records checkpoint``: what they print, and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundlock.cli import main
from groundlock.stores import DeltaAuditStore
from tests.stores.rows import query_row, validation_row


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def root(tmp_path: Path) -> Path:
    audit = tmp_path / "audit"
    store = DeltaAuditStore(audit, flush_interval_seconds=30)
    for number in range(3):
        store.record(validation_row(request_id=f"r{number}"), query_row(request_id=f"r{number}"))
        store.flush()
    store.close()
    return audit


def test_verify_passes_an_untouched_trail(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "records", "verify", "--store", str(root))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("validations: versions 0-3, 3 linked commit(s), 3 row(s): verified")
    assert lines[1].startswith("queries: versions 0-3, 3 linked commit(s), 3 row(s): verified")


def test_verify_names_table_version_and_file_and_exits_1(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (victim,) = sorted((root / "queries").glob("*.parquet"))[:1]
    victim.unlink()
    code, out, _ = _run(capsys, "records", "verify", "--store", str(root))
    assert code == 1
    assert f"file {victim.name}: a data file the commit added is gone" in out
    assert "FILE_MISSING: queries version" in out


def test_checkpoint_then_truncation_is_found(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = tmp_path / "key"
    key.write_text("an operator key kept elsewhere\n")
    signed = tmp_path / "checkpoint.json"
    argv = ("--store", str(root), "--key-file", str(key), "--checkpoint", str(signed))
    code, out, _ = _run(capsys, "records", "checkpoint", *argv)
    assert (code, out.splitlines()[-1]) == (0, "checkpoint written: 2 table head(s) signed")
    assert "an operator key" not in signed.read_text()
    assert set(json.loads(signed.read_text())["tables"]) == {"validations", "queries"}
    code, out, _ = _run(capsys, "records", "verify", *argv)
    assert code == 0
    assert out.splitlines()[-1].startswith("checkpoint: signature valid")
    (root / "validations" / "_delta_log" / f"{3:020d}.json").unlink()
    code, out, _ = _run(capsys, "records", "verify", *argv)
    assert code == 1
    assert "TRUNCATED: validations version 3: the history ends at version 2" in out
    code, _, err = _run(capsys, "records", "checkpoint", *argv)
    assert code == 2
    assert "never overwritten" in err


def test_key_file_without_checkpoint_is_a_usage_error(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "records", "verify", "--store", str(root), "--key-file", "k")
    assert code == 2
    assert "go together" in err


def test_report_says_whether_the_rows_it_reads_verify(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from deltalake import DeltaTable, write_deltalake  # noqa: PLC0415

    from groundlock.contracts.audit_rows import ValidationRow  # noqa: PLC0415
    from groundlock.stores.arrow import to_arrow  # noqa: PLC0415

    page = tmp_path / "report.html"
    argv = ("report", "--store", str(root), "--since", "2000-01-01", "--out", str(page))
    code, out, _ = _run(capsys, *argv)
    assert code == 0
    assert out.splitlines()[-1] == "trail integrity: verified (the hash chain of every table holds)"
    assert "trail integrity: verified" in page.read_text(encoding="utf-8")
    # A row committed around the store (plain delta-rs): readable, and reported.
    table = DeltaTable(str(root / "validations"))
    write_deltalake(table, to_arrow(ValidationRow, [validation_row(request_id="x")]), mode="append")
    code, out, _ = _run(capsys, *argv)
    assert code == 0  # the report is still written, and says what is wrong
    assert out.splitlines()[-1].startswith("trail integrity: 1 problem(s) found")
    assert "UNLINKED_COMMIT: validations version 4" in out
    assert "1 problem(s) found" in page.read_text(encoding="utf-8")
