"""The trail's hash chain: an untouched trail verifies, and each kind of tampering is named.

Every test writes a real trail through ``DeltaAuditStore``, once on the local filesystem,
once on S3 (moto's server) and once on Azure Blob Storage (Azurite; ``place`` in
``tests/stores/conftest.py``), and tampers with it as an attacker with write access to that
storage would: editing, deleting or replacing Parquet files, committing rows with plain
delta-rs, cutting or garbling the log.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from deltalake import CommitProperties, DeltaTable, write_deltalake

from groundlock.stores import DeltaAuditStore, ValidationRow
from groundlock.stores.arrow import to_arrow
from groundlock.stores.hashchain import Link, batch_digest, model_row_hash
from groundlock.stores.layout import table_rows
from groundlock.stores.verify import (
    Finding,
    TableReport,
    check_checkpoint,
    make_checkpoint,
    verify_table,
)
from tests.stores.places import Place
from tests.stores.rows import query_row, validation_row

KEY = b"operator-held key, never beside the trail"


def _trail(place: Place, batches: int = 3, per_batch: int = 4) -> DeltaAuditStore:
    store = place.store()
    for batch in range(batches):
        for number in range(per_batch):
            request_id = f"r{batch}-{number}"
            store.record(validation_row(request_id=request_id), query_row(request_id=request_id))
        store.flush()
    store.close()
    return store


def _verify(place: Place, table: str = "validations", since: int = 0) -> TableReport:
    return verify_table(f"{place.root}/{table}", table, since=since, storage_options=place.options)


def _kinds(report: TableReport) -> list[tuple[str, int | None]]:
    return [(finding.kind, finding.version) for finding in report.findings]


def _commit_key(version: int, table: str = "validations") -> str:
    return f"{table}/_delta_log/{version:020d}.json"


def _files_of(place: Place, version: int, table: str = "validations") -> list[str]:
    """The keys (relative to the store's root) of the data files a version added."""
    text = place.read(_commit_key(version, table)).decode()
    actions = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [f"{table}/{unquote(action['add']['path'])}" for action in actions if "add" in action]


def _name(key: str) -> str:
    return key.rsplit("/", 1)[-1]


def _table(place: Place, table: str = "validations") -> DeltaTable:
    return DeltaTable(f"{place.root}/{table}", storage_options=place.options or None)


def _forged_file(tmp_path: Path, rows: list[ValidationRow]) -> bytes:
    """A Parquet file holding ``rows``, written by plain delta-rs in a local scratch table."""
    scratch = tmp_path / f"scratch-{len(list(tmp_path.glob('scratch-*')))}"
    write_deltalake(str(scratch), to_arrow(ValidationRow, rows))
    (path,) = scratch.glob("*.parquet")
    return path.read_bytes()


def _rows_of_version(store: DeltaAuditStore, version: int) -> list[ValidationRow]:
    ids = {f"r{version - 1}-{n}" for n in range(4)}  # batch b landed at version b + 1
    return [row for row in store.select(ValidationRow) if row.request_id in ids]


@pytest.fixture
def trail(place: Place) -> tuple[Place, DeltaAuditStore]:
    return place, _trail(place)


def test_untouched_trail_verifies(trail: tuple[Place, DeltaAuditStore]) -> None:
    place, _ = trail
    for table in ("validations", "queries"):
        report = _verify(place, table)
        assert report.findings == []
        assert (report.first_version, report.last_version) == (0, 3)
        assert (report.links, report.rows) == (3, 12)
        assert "verified" in report.summary()


def test_every_append_records_a_link_to_the_one_before(
    trail: tuple[Place, DeltaAuditStore],
) -> None:
    place, _ = trail
    history = _table(place).history()  # newest first
    links = [commit["groundlock.chain"] for commit in history if "groundlock.chain" in commit]
    links.reverse()
    assert [link["seq"] for link in links] == [1, 2, 3]
    assert [link["prev"] for link in links[1:]] == [link["digest"] for link in links[:-1]]


def test_an_edited_row_is_named_by_version_and_file(
    tmp_path: Path, trail: tuple[Place, DeltaAuditStore]
) -> None:
    place, store = trail
    rows = _rows_of_version(store, 2)
    edited = [rows[0].model_copy(update={"status": "FAILED"}), *rows[1:]]
    (target,) = _files_of(place, 2)
    place.write(target, _forged_file(tmp_path, edited))
    report = _verify(place)
    assert _kinds(report) == [("ROW_CHANGED", 2)]
    assert report.findings[0].files == (_name(target),)


def test_an_inserted_row_in_a_file_is_found(
    tmp_path: Path, trail: tuple[Place, DeltaAuditStore]
) -> None:
    place, store = trail
    rows = _rows_of_version(store, 1)
    (target,) = _files_of(place, 1)
    place.write(target, _forged_file(tmp_path, [*rows, validation_row(request_id="forged")]))
    report = _verify(place)
    assert _kinds(report) == [("ROW_CHANGED", 1)]
    assert "5 row(s) read, 4 committed" in report.findings[0].detail


def test_a_deleted_data_file_is_named(trail: tuple[Place, DeltaAuditStore]) -> None:
    place, _ = trail
    (target,) = _files_of(place, 3)
    place.delete(target)
    report = _verify(place)
    assert _kinds(report) == [("FILE_MISSING", 3)]
    assert report.findings[0].files == (_name(target),)


def test_a_data_file_replaced_by_another_commits_file_is_found(
    trail: tuple[Place, DeltaAuditStore],
) -> None:
    place, _ = trail
    (first,), (second,) = _files_of(place, 1), _files_of(place, 2)
    place.write(second, place.read(first))
    assert _kinds(_verify(place)) == [("ROW_CHANGED", 2)]


def test_a_file_that_is_not_parquet_any_more_is_named(
    trail: tuple[Place, DeltaAuditStore],
) -> None:
    place, _ = trail
    (target,) = _files_of(place, 1)
    place.write(target, b"not parquet")
    assert _kinds(_verify(place)) == [("FILE_UNREADABLE", 1)]


def test_rows_committed_with_plain_delta_rs_are_an_unlinked_commit(
    trail: tuple[Place, DeltaAuditStore],
) -> None:
    place, _ = trail
    table = _table(place)
    rows = table_rows(table, ValidationRow, [validation_row(request_id="x")])
    write_deltalake(table, rows, mode="append")
    assert _kinds(_verify(place)) == [("UNLINKED_COMMIT", 4)]


def test_a_forged_link_that_does_not_follow_the_chain_is_found(
    trail: tuple[Place, DeltaAuditStore],
) -> None:
    # The forger hashes its rows correctly, but over a made-up predecessor.
    place, _ = trail
    row = validation_row(request_id="forged")
    prev = "00" * 32
    link = Link(4, prev, batch_digest("validations", prev, [model_row_hash(row)]), 1, "x")
    table = _table(place)
    write_deltalake(
        table,
        table_rows(table, ValidationRow, [row]),
        mode="append",
        commit_properties=CommitProperties(custom_metadata=link.metadata()),
    )
    assert _kinds(_verify(place)) == [("CHAIN_BROKEN", 4)]


def test_a_commit_missing_from_the_middle_of_the_log_is_a_gap(
    trail: tuple[Place, DeltaAuditStore],
) -> None:
    # delta-rs cannot load this table any more; the verifier still names the version.
    place, _ = trail
    place.delete(_commit_key(2))
    assert _kinds(_verify(place)) == [("LOG_GAP", 2), ("CHAIN_BROKEN", 3)]


def test_a_commit_file_that_is_not_json_is_named(trail: tuple[Place, DeltaAuditStore]) -> None:
    place, _ = trail
    place.write(_commit_key(2), b"\x00 not a Delta commit")
    report = _verify(place)
    assert _kinds(report) == [("LOG_UNREADABLE", 2), ("CHAIN_BROKEN", 3)]
    assert report.last_version == 3


def test_a_log_cut_below_its_first_commit_is_not_loadable(
    trail: tuple[Place, DeltaAuditStore],
) -> None:
    # Without a Delta checkpoint, version 0 is where the table's schema lives.
    place, _ = trail
    place.delete(_commit_key(0))
    report = _verify(place)
    assert _kinds(report) == [("LOG_TRUNCATED", 1), ("LOG_UNREADABLE", None)]
    assert "delta-rs cannot load this table's log" in report.findings[1].detail
    assert report.first_version == 1


def test_a_log_cleaned_below_a_delta_checkpoint_is_truncated_and_verifies_from_its_oldest_commit(
    trail: tuple[Place, DeltaAuditStore],
) -> None:
    # What Delta's log cleanup leaves: a checkpoint, and the commits from it on. The links
    # before are gone (LOG_TRUNCATED); the one left still accounts for every row.
    place, _ = trail
    _table(place).create_checkpoint()
    for version in range(3):
        place.delete(_commit_key(version))
    report = _verify(place)
    assert _kinds(report) == [("LOG_TRUNCATED", 3)]
    assert (report.first_version, report.last_version, report.links) == (3, 3, 1)
    assert report.live_rows == 12


def test_compaction_keeps_the_trail_verifiable(trail: tuple[Place, DeltaAuditStore]) -> None:
    place, store = trail
    store.compact()
    report = _verify(place)
    assert report.findings == []
    assert report.last_version == 4


def test_compaction_and_vacuum_keep_the_trail_verifiable(place: Place) -> None:
    # The originals a compaction replaced are deleted: the row set still accounts for them.
    store = _trail(place)
    vacuuming = place.store(min_vacuum_retention_hours=0)
    vacuuming.compact()
    assert len(vacuuming.vacuum(0, dry_run=False)["validations"]) == 3
    report = _verify(place)
    assert report.findings == []
    assert (report.moved_links, report.live_rows) == (3, 12)
    del store


def test_a_row_edited_after_compaction_and_vacuum_is_found(tmp_path: Path, place: Place) -> None:
    store = _trail(place)
    vacuuming = place.store(min_vacuum_retention_hours=0)
    vacuuming.compact()
    vacuuming.vacuum(0, dry_run=False)
    rows = store.select(ValidationRow)
    (compacted,) = _table(place).file_uris()
    key = f"validations/{unquote(compacted.split('/validations/', 1)[1])}"  # (its day's folder)
    edited = [rows[0].model_copy(update={"status": "FAILED"}), *rows[1:]]
    place.write(key, _forged_file(tmp_path, edited))
    report = _verify(place)
    assert _kinds(report) == [("LIVE_ROWS_CHANGED", None)]
    assert report.findings[0].files == (_name(key),)


def _checkpoint(place: Place, key: bytes = KEY) -> dict[str, Any]:
    return make_checkpoint([_verify(place, t) for t in ("validations", "queries")], key)


def _against(place: Place, checkpoint: dict[str, Any], key: bytes = KEY) -> list[Finding]:
    reports = [_verify(place, t) for t in ("validations", "queries")]
    return check_checkpoint(checkpoint, key, reports)


def test_a_checkpoint_holds_on_a_trail_that_only_grew(place: Place) -> None:
    _trail(place, batches=2)
    checkpoint = _checkpoint(place)
    _trail(place, batches=1)  # more rows after the checkpoint: still consistent
    assert _against(place, checkpoint) == []


def test_a_truncated_tail_after_a_signed_checkpoint_is_found(
    trail: tuple[Place, DeltaAuditStore],
) -> None:
    place, _ = trail
    checkpoint = _checkpoint(place)
    place.delete(_commit_key(3))
    assert _verify(place).findings == []  # without the checkpoint a clean cut is invisible
    findings = _against(place, checkpoint)
    assert [(f.table, f.kind, f.version) for f in findings] == [("validations", "TRUNCATED", 3)]


def test_a_rewritten_tail_after_a_signed_checkpoint_is_found(
    trail: tuple[Place, DeltaAuditStore],
) -> None:
    # Cut the last commit and let the store write another in its place: a chain that
    # recomputes cleanly, but not the one that was signed.
    place, _ = trail
    checkpoint = _checkpoint(place)
    place.delete(_commit_key(3))
    store = place.store()
    store.record(validation_row(request_id="other"), query_row(request_id="other"))
    store.close()
    assert _verify(place).findings == []
    assert [f.kind for f in _against(place, checkpoint)] == ["HISTORY_REWRITTEN"]


def test_a_checkpoint_under_another_key_or_edited_is_refused(
    trail: tuple[Place, DeltaAuditStore],
) -> None:
    place, _ = trail
    checkpoint = _checkpoint(place)
    assert [f.kind for f in _against(place, checkpoint, key=b"another key")] == ["BAD_SIGNATURE"]
    checkpoint["tables"]["validations"]["version"] = 1
    assert [f.kind for f in _against(place, checkpoint)] == ["BAD_SIGNATURE"]


def test_a_trail_that_does_not_verify_is_not_signed(trail: tuple[Place, DeltaAuditStore]) -> None:
    place, _ = trail
    place.delete(_files_of(place, 1)[0])
    with pytest.raises(ValueError, match="validations did not verify"):
        _checkpoint(place)


def test_since_skips_older_files_but_keeps_the_chain(trail: tuple[Place, DeltaAuditStore]) -> None:
    place, _ = trail
    place.delete(_files_of(place, 1)[0])
    assert _verify(place, since=2).findings == []
    assert _kinds(_verify(place)) == [("FILE_MISSING", 1)]
