"""``groundlock records verify`` and ``records checkpoint``: what they print, and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from deltalake import DeltaTable, write_deltalake

from groundlock.cli import main
from groundlock.contracts.audit_rows import ValidationRow
from groundlock.stores import DeltaAuditStore
from groundlock.stores.layout import table_rows
from tests.fakes.s3 import ACCESS_KEY, SECRET_KEY, S3Server
from tests.stores.places import S3Place
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
    (victim,) = sorted((root / "queries").rglob("*.parquet"))[:1]
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
    page = tmp_path / "report.html"
    argv = ("report", "--store", str(root), "--since", "2000-01-01", "--out", str(page))
    code, out, _ = _run(capsys, *argv)
    assert code == 0
    assert out.splitlines()[-1] == "trail integrity: verified (the hash chain of every table holds)"
    assert "trail integrity: verified" in page.read_text(encoding="utf-8")
    # A row committed around the store (plain delta-rs): readable, and reported.
    table = DeltaTable(str(root / "validations"))
    rows = table_rows(table, ValidationRow, [validation_row(request_id="x")])
    write_deltalake(table, rows, mode="append")
    code, out, _ = _run(capsys, *argv)
    assert code == 0  # the report is still written, and says what is wrong
    assert out.splitlines()[-1].startswith("trail integrity: 1 problem(s) found")
    assert "UNLINKED_COMMIT: validations version 4" in out
    assert "1 problem(s) found" in page.read_text(encoding="utf-8")


@pytest.fixture
def s3_env(
    s3: tuple[S3Server, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[S3Server, str]:
    """moto's server and a bucket, reached through the AWS_* environment as delta-rs reads it."""
    for key, value in s3[0].storage_options().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("GROUNDLOCK_SPOOL_DIR", str(tmp_path / "cli-spool"))
    return s3


@pytest.fixture
def on_s3(s3_env: tuple[S3Server, str], tmp_path: Path) -> S3Place:
    """A trail of three commits in the bucket."""
    place = S3Place(*s3_env, tmp_path / "spool")
    store = place.store()
    for number in range(3):
        store.record(validation_row(request_id=f"r{number}"), query_row(request_id=f"r{number}"))
        store.flush()
    store.close()
    return place


def _added(place: S3Place, table: str, version: int) -> str:
    log = place.read(f"{table}/_delta_log/{version:020d}.json").decode()
    (path,) = [json.loads(line)["add"]["path"] for line in log.splitlines() if '"add"' in line]
    return f"{table}/{path}"


def _no_secret(place: S3Place, *texts: str) -> None:
    for text in texts:
        for secret in (ACCESS_KEY, SECRET_KEY, place.server.endpoint, place.bucket):
            assert secret not in text


def test_verify_on_s3_passes_an_untouched_trail_and_names_a_replaced_file(
    on_s3: S3Place, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "records", "verify", "--store", on_s3.root)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith("validations: versions 0-3, 3 linked commit(s), 3 row(s): verified")
    assert lines[1].startswith("queries: versions 0-3, 3 linked commit(s), 3 row(s): verified")
    victim = _added(on_s3, "queries", 2)
    on_s3.write(victim, on_s3.read(_added(on_s3, "queries", 1)))
    code, out, err = _run(capsys, "records", "verify", "--store", on_s3.root)
    assert code == 1
    assert f"ROW_CHANGED: queries version 2 file {victim.rsplit('/', 1)[-1]}: " in out
    assert "validations: versions 0-3, 3 linked commit(s), 3 row(s): verified" in out
    assert "queries: versions 0-3, 3 linked commit(s), 3 row(s): 1 problem(s)" in out
    _no_secret(on_s3, out, err)


def test_checkpoint_on_s3_then_truncation_is_found(
    on_s3: S3Place, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = tmp_path / "key"
    key.write_text("an operator key kept elsewhere\n")
    signed = tmp_path / "checkpoint.json"
    argv = ("--store", on_s3.root, "--key-file", str(key), "--checkpoint", str(signed))
    code, out, _ = _run(capsys, "records", "checkpoint", *argv)
    assert (code, out.splitlines()[-1]) == (0, "checkpoint written: 2 table head(s) signed")
    on_s3.delete(f"validations/_delta_log/{3:020d}.json")
    code, out, err = _run(capsys, "records", "verify", *argv)
    assert code == 1
    assert "TRUNCATED: validations version 3: the history ends at version 2" in out
    _no_secret(on_s3, out, err, signed.read_text())


def test_report_on_s3_says_whether_the_trail_verifies(
    on_s3: S3Place, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "report.html"
    argv = ("report", "--store", on_s3.root, "--since", "2000-01-01", "--out", str(page))
    code, out, _ = _run(capsys, *argv)
    assert code == 0
    assert out.splitlines()[-1] == "trail integrity: verified (the hash chain of every table holds)"
    # A row committed around the store (plain delta-rs, the same AWS_* environment).
    table = DeltaTable(f"{on_s3.root}/validations")
    rows = table_rows(table, ValidationRow, [validation_row(request_id="x")])
    write_deltalake(table, rows, mode="append")
    code, out, err = _run(capsys, *argv)
    assert code == 0  # the report is still written, and says what is wrong
    assert out.splitlines()[-1].startswith("trail integrity: 1 problem(s) found")
    assert "UNLINKED_COMMIT: validations version 4" in out
    _no_secret(on_s3, out, err, page.read_text(encoding="utf-8"))


def test_verify_on_a_missing_bucket_names_the_cause_not_the_uri(
    s3_env: tuple[S3Server, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "records", "verify", "--store", "s3://no-such-bucket-7f3/audit")
    assert (code, out) == (1, "")
    assert err == (
        "groundlock: the validations table cannot be opened (OSError: the bucket does not exist)\n"
    )
    for secret in ("no-such-bucket-7f3", ACCESS_KEY, SECRET_KEY, s3_env[0].endpoint):
        assert secret not in err
