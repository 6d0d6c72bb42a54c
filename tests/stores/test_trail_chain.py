"""The trail's hash chain: an untouched trail verifies, and each kind of tampering is named.

Every test writes a real trail through ``DeltaAuditStore`` and tampers with it as an
attacker with write access would: editing, deleting or replacing Parquet files on disk,
committing rows with plain delta-rs, cutting the log's tail.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from deltalake import CommitProperties, DeltaTable, write_deltalake

from groundlock.stores import DeltaAuditStore, ValidationRow
from groundlock.stores.arrow import to_arrow
from groundlock.stores.hashchain import Link, batch_digest, model_row_hash
from groundlock.stores.verify import (
    Finding,
    TableReport,
    check_checkpoint,
    make_checkpoint,
    verify_table,
)
from tests.stores.rows import query_row, validation_row

KEY = b"operator-held key, never beside the trail"


def _trail(root: Path, batches: int = 3, per_batch: int = 4) -> DeltaAuditStore:
    store = DeltaAuditStore(root, flush_interval_seconds=30)
    for batch in range(batches):
        for number in range(per_batch):
            request_id = f"r{batch}-{number}"
            store.record(validation_row(request_id=request_id), query_row(request_id=request_id))
        store.flush()
    store.close()
    return store


def _verify(root: Path, table: str = "validations", since: int = 0) -> TableReport:
    return verify_table(root / table, table, since=since)


def _kinds(report: TableReport) -> list[tuple[str, int | None]]:
    return [(finding.kind, finding.version) for finding in report.findings]


def _files_of(root: Path, version: int, table: str = "validations") -> list[Path]:
    log = root / table / "_delta_log" / f"{version:020d}.json"
    actions = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [root / table / action["add"]["path"] for action in actions if "add" in action]


def _forged_file(tmp_path: Path, rows: list[ValidationRow]) -> Path:
    """A Parquet file holding ``rows``, written by plain delta-rs in a scratch table."""
    scratch = tmp_path / f"scratch-{len(list(tmp_path.glob('scratch-*')))}"
    write_deltalake(str(scratch), to_arrow(ValidationRow, rows))
    (path,) = scratch.glob("*.parquet")
    return path


def _rows_of_version(store: DeltaAuditStore, version: int) -> list[ValidationRow]:
    ids = {f"r{version - 1}-{n}" for n in range(4)}  # batch b landed at version b + 1
    return [row for row in store.select(ValidationRow) if row.request_id in ids]


@pytest.fixture
def trail(tmp_path: Path) -> tuple[Path, DeltaAuditStore]:
    root = tmp_path / "audit"
    return root, _trail(root)


def test_untouched_trail_verifies(trail: tuple[Path, DeltaAuditStore]) -> None:
    root, _ = trail
    for table in ("validations", "queries"):
        report = _verify(root, table)
        assert report.findings == []
        assert (report.links, report.rows) == (3, 12)
        assert "verified" in report.summary()


def test_every_append_records_a_link_to_the_one_before(trail: tuple[Path, DeltaAuditStore]) -> None:
    root, _ = trail
    history = DeltaTable(str(root / "validations")).history()  # newest first
    links = [commit["groundlock.chain"] for commit in history if "groundlock.chain" in commit]
    links.reverse()
    assert [link["seq"] for link in links] == [1, 2, 3]
    assert [link["prev"] for link in links[1:]] == [link["digest"] for link in links[:-1]]


def test_an_edited_row_is_named_by_version_and_file(
    tmp_path: Path, trail: tuple[Path, DeltaAuditStore]
) -> None:
    root, store = trail
    rows = _rows_of_version(store, 2)
    edited = [rows[0].model_copy(update={"status": "FAILED"}), *rows[1:]]
    (target,) = _files_of(root, 2)
    shutil.copyfile(_forged_file(tmp_path, edited), target)
    report = _verify(root)
    assert _kinds(report) == [("ROW_CHANGED", 2)]
    assert report.findings[0].files == (target.name,)


def test_an_inserted_row_in_a_file_is_found(
    tmp_path: Path, trail: tuple[Path, DeltaAuditStore]
) -> None:
    root, store = trail
    rows = _rows_of_version(store, 1)
    (target,) = _files_of(root, 1)
    shutil.copyfile(_forged_file(tmp_path, [*rows, validation_row(request_id="forged")]), target)
    report = _verify(root)
    assert _kinds(report) == [("ROW_CHANGED", 1)]
    assert "5 row(s) read, 4 committed" in report.findings[0].detail


def test_a_deleted_data_file_is_named(trail: tuple[Path, DeltaAuditStore]) -> None:
    root, _ = trail
    (target,) = _files_of(root, 3)
    target.unlink()
    report = _verify(root)
    assert _kinds(report) == [("FILE_MISSING", 3)]
    assert report.findings[0].files == (target.name,)


def test_a_data_file_replaced_by_another_commits_file_is_found(
    trail: tuple[Path, DeltaAuditStore],
) -> None:
    root, _ = trail
    (first,), (second,) = _files_of(root, 1), _files_of(root, 2)
    shutil.copyfile(first, second)
    assert _kinds(_verify(root)) == [("ROW_CHANGED", 2)]


def test_a_file_that_is_not_parquet_any_more_is_named(trail: tuple[Path, DeltaAuditStore]) -> None:
    root, _ = trail
    (target,) = _files_of(root, 1)
    target.write_bytes(b"not parquet")
    assert _kinds(_verify(root)) == [("FILE_UNREADABLE", 1)]


def test_rows_committed_with_plain_delta_rs_are_an_unlinked_commit(
    trail: tuple[Path, DeltaAuditStore],
) -> None:
    root, _ = trail
    table = DeltaTable(str(root / "validations"))
    write_deltalake(table, to_arrow(ValidationRow, [validation_row(request_id="x")]), mode="append")
    assert _kinds(_verify(root)) == [("UNLINKED_COMMIT", 4)]


def test_a_forged_link_that_does_not_follow_the_chain_is_found(
    trail: tuple[Path, DeltaAuditStore],
) -> None:
    # The forger hashes its rows correctly, but over a made-up predecessor.
    root, _ = trail
    row = validation_row(request_id="forged")
    prev = "00" * 32
    link = Link(4, prev, batch_digest("validations", prev, [model_row_hash(row)]), 1, "x")
    write_deltalake(
        str(root / "validations"),
        to_arrow(ValidationRow, [row]),
        mode="append",
        commit_properties=CommitProperties(custom_metadata=link.metadata()),
    )
    assert _kinds(_verify(root)) == [("CHAIN_BROKEN", 4)]


def test_compaction_keeps_the_trail_verifiable(trail: tuple[Path, DeltaAuditStore]) -> None:
    root, store = trail
    store.compact()
    report = _verify(root)
    assert report.findings == []
    assert report.last_version == 4


def _checkpoint(root: Path, key: bytes = KEY) -> dict[str, Any]:
    return make_checkpoint([_verify(root, t) for t in ("validations", "queries")], key)


def _against(root: Path, checkpoint: dict[str, Any], key: bytes = KEY) -> list[Finding]:
    return check_checkpoint(checkpoint, key, [_verify(root, t) for t in ("validations", "queries")])


def test_a_checkpoint_holds_on_a_trail_that_only_grew(tmp_path: Path) -> None:
    root = tmp_path / "audit"
    _trail(root, batches=2)
    checkpoint = _checkpoint(root)
    _trail(root, batches=1)  # more rows after the checkpoint: still consistent
    assert _against(root, checkpoint) == []


def test_a_truncated_tail_after_a_signed_checkpoint_is_found(
    trail: tuple[Path, DeltaAuditStore],
) -> None:
    root, _ = trail
    checkpoint = _checkpoint(root)
    (root / "validations" / "_delta_log" / f"{3:020d}.json").unlink()
    assert _verify(root).findings == []  # without the checkpoint a clean cut is invisible
    findings = _against(root, checkpoint)
    assert [(f.table, f.kind, f.version) for f in findings] == [("validations", "TRUNCATED", 3)]


def test_a_rewritten_tail_after_a_signed_checkpoint_is_found(
    trail: tuple[Path, DeltaAuditStore],
) -> None:
    # Cut the last commit and let the store write another in its place: a chain that
    # recomputes cleanly, but not the one that was signed.
    root, _ = trail
    checkpoint = _checkpoint(root)
    (root / "validations" / "_delta_log" / f"{3:020d}.json").unlink()
    store = DeltaAuditStore(root, flush_interval_seconds=30)
    store.record(validation_row(request_id="other"), query_row(request_id="other"))
    store.close()
    assert _verify(root).findings == []
    assert [f.kind for f in _against(root, checkpoint)] == ["HISTORY_REWRITTEN"]


def test_a_checkpoint_under_another_key_or_edited_is_refused(
    trail: tuple[Path, DeltaAuditStore],
) -> None:
    root, _ = trail
    checkpoint = _checkpoint(root)
    assert [f.kind for f in _against(root, checkpoint, key=b"another key")] == ["BAD_SIGNATURE"]
    checkpoint["tables"]["validations"]["version"] = 1
    assert [f.kind for f in _against(root, checkpoint)] == ["BAD_SIGNATURE"]


def test_a_trail_that_does_not_verify_is_not_signed(trail: tuple[Path, DeltaAuditStore]) -> None:
    root, _ = trail
    _files_of(root, 1)[0].unlink()
    with pytest.raises(ValueError, match="validations did not verify"):
        _checkpoint(root)


def test_since_skips_older_files_but_keeps_the_chain(trail: tuple[Path, DeltaAuditStore]) -> None:
    root, _ = trail
    _files_of(root, 1)[0].unlink()
    assert _verify(root, since=2).findings == []
    assert _kinds(_verify(root)) == [("FILE_MISSING", 1)]
