"""The chain through upkeep: compaction and vacuum, Delta's log cleanup, and feedback.

Real trails written through ``DeltaAuditStore``, compacted and vacuumed by the store, their
logs cleaned by delta-rs itself, and tampered with as in ``test_trail_chain.py``: files
rewritten on disk, rows committed with plain delta-rs. A trail from before this version
(format-1 links, unchained feedback) is made as the older store made it.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from deltalake import CommitProperties, DeltaTable, write_deltalake

from groundlock.contracts.audit_rows import FeedbackRow, TableRow
from groundlock.stores import DeltaAuditStore, QueryRow, ValidationRow
from groundlock.stores import delta as delta_module
from groundlock.stores.arrow import arrow_schema, to_arrow
from groundlock.stores.hashchain import (
    EMPTY,
    Link,
    batch_digest,
    chain_head,
    genesis,
    model_row_hash,
)
from groundlock.stores.layout import table_rows
from groundlock.stores.readers import table_row
from groundlock.stores.verify import (
    TableReport,
    _file_rows,
    check_checkpoint,
    make_checkpoint,
    verify_table,
    waive_covered_truncation,
)
from tests.stores.rows import query_row, validation_row

KEY = b"operator-held key, never beside the trail"


def _trail(root: Path, batches: int = 3, per_batch: int = 4) -> DeltaAuditStore:
    store = DeltaAuditStore(root, flush_interval_seconds=30, min_vacuum_retention_hours=0)
    for batch in range(batches):
        for number in range(per_batch):
            request_id = f"r{batch}-{number}"
            store.record(validation_row(request_id=request_id), query_row(request_id=request_id))
        store.flush()
    store.close()
    return store


def _verify(root: Path, table: str = "validations") -> TableReport:
    return verify_table(root / table, table)


def _kinds(report: TableReport) -> list[tuple[str, int | None]]:
    return [(finding.kind, finding.version) for finding in report.findings]


def _live(root: Path, table: str = "validations") -> list[Path]:
    return [Path(uri) for uri in DeltaTable(str(root / table)).file_uris()]


def _compacted_and_vacuumed(store: DeltaAuditStore) -> None:
    store.compact()
    store.vacuum(0, dry_run=False)


def _forged_file(tmp_path: Path, rows: list[ValidationRow]) -> Path:
    """A Parquet file holding ``rows``, written by plain delta-rs in a scratch table."""
    scratch = tmp_path / f"scratch-{len(list(tmp_path.glob('scratch-*')))}"
    write_deltalake(str(scratch), to_arrow(ValidationRow, rows))
    (path,) = scratch.glob("*.parquet")
    return path


@pytest.fixture
def vacuumed(tmp_path: Path) -> tuple[Path, DeltaAuditStore]:
    """A trail of three batches, compacted into one file per table, the old files deleted."""
    root = tmp_path / "audit"
    store = _trail(root)
    _compacted_and_vacuumed(store)
    return root, store


# -- compaction and vacuum ----------------------------------------------------------------------


def test_an_untouched_trail_verifies_after_compaction_and_vacuum(
    vacuumed: tuple[Path, DeltaAuditStore],
) -> None:
    root, _ = vacuumed
    for table in ("validations", "queries"):
        assert len(_live(root, table)) == 1
        assert len(list((root / table).rglob("*.parquet"))) == 1  # the originals are gone
        report = _verify(root, table)
        assert report.findings == []
        assert (report.links, report.moved_links, report.live_rows) == (3, 3, 12)
        assert "row set: the 12 live row(s) are the chain's" in report.summary()


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ("edit", "a row edited"),
        ("drop", "1 row(s) dropped"),
        ("insert", "1 row(s) inserted"),
    ],
)
def test_a_row_changed_after_compaction_and_vacuum_is_found(
    tmp_path: Path, vacuumed: tuple[Path, DeltaAuditStore], change: str, said: str
) -> None:
    root, store = vacuumed
    rows = store.select(ValidationRow)
    changed = {
        "edit": [rows[0].model_copy(update={"status": "FAILED"}), *rows[1:]],
        "drop": rows[1:],
        "insert": [*rows, validation_row(request_id="forged")],
    }[change]
    (compacted,) = _live(root)
    shutil.copyfile(_forged_file(tmp_path, changed), compacted)
    report = _verify(root)
    assert _kinds(report) == [("LIVE_ROWS_CHANGED", None)]
    assert report.findings[0].files == (compacted.name,)
    assert said in report.findings[0].detail
    assert "commits at versions 0-4" in report.findings[0].detail
    assert _verify(root, "queries").findings == []  # the other table is untouched


def test_a_row_dropped_from_one_of_two_compacted_files_names_that_file(tmp_path: Path) -> None:
    # One compaction writes two files (two batches each); a vacuum deletes the originals.
    root = tmp_path / "audit"
    store = _trail(root, batches=4)
    table = DeltaTable(str(root / "validations"))
    small = min(path.stat().st_size for path in _live(root))
    assert table.optimize.compact(target_size=2 * small + 10)["numFilesAdded"] == 2
    store.vacuum(0, dry_run=False)
    assert _verify(root).findings == []
    target, other = _live(root)
    kept = [table_row(ValidationRow, row) for row in _file_rows(target)[1:]]
    assert all(isinstance(row, ValidationRow) for row in kept)
    shutil.copyfile(_forged_file(tmp_path, kept), target)  # type: ignore[arg-type]
    report = _verify(root)
    assert _kinds(report) == [("LIVE_ROWS_CHANGED", None)]
    assert report.findings[0].files == (target.name,)  # not the other file of its group
    assert "the 15 row(s) in 2 live file(s) are not the 16 row(s)" in report.findings[0].detail
    assert "1 row(s) dropped" in report.findings[0].detail
    assert other.exists()


# -- format-1 links ------------------------------------------------------------------------------


def _old_table(root: Path, row_type: type[TableRow]) -> Path:
    """A table as an older groundlock created it: append-only, nothing else."""
    path = root / row_type.table
    DeltaTable.create(str(path), arrow_schema(row_type), configuration={"delta.appendOnly": "true"})
    return path


def _old_append(path: Path, row_type: type[TableRow], rows: list[TableRow], *, link: bool) -> None:
    """An append as the format-1 store made it (a link over the commit's rows), or unlinked."""
    metadata: dict[str, object] = {}
    if link:
        history = DeltaTable(str(path)).history()
        links = [c["groundlock.chain"] for c in history if "groundlock.chain" in c]
        prev = links[0]["digest"] if links else genesis(row_type.table)
        seq = links[0]["seq"] + 1 if links else 1
        hashes = [model_row_hash(row) for row in rows]
        metadata = Link(
            seq, prev, batch_digest(row_type.table, prev, hashes), len(rows), "old"
        ).metadata()
    write_deltalake(
        str(path), to_arrow(row_type, rows), mode="append",
        commit_properties=CommitProperties(custom_metadata=metadata),
    )  # fmt: skip


def _old_trail(root: Path) -> None:
    """Two format-1 linked commits per table, and two unchained feedback rows."""
    for row_type, make in ((ValidationRow, validation_row), (QueryRow, query_row)):
        path = _old_table(root, row_type)
        for batch in range(2):
            rows = [make(request_id=f"old{batch}-{n}") for n in range(3)]
            _old_append(path, row_type, rows, link=True)
    feedback = _old_table(root, FeedbackRow)
    for number in range(2):
        _old_append(feedback, FeedbackRow, [_feedback(f"old{number}")], link=False)


def _feedback(request_id: str, rating: int = 4) -> FeedbackRow:
    from datetime import UTC, datetime  # noqa: PLC0415

    return FeedbackRow(
        record_id=f"fb-{request_id}", timestamp_utc=datetime.now(UTC),
        request_id=request_id, rating=rating, comment=None,
    )  # fmt: skip


def test_format_1_links_still_verify(tmp_path: Path) -> None:
    root = tmp_path / "audit"
    _old_trail(root)
    report = _verify(root)
    assert report.findings == []
    assert (report.links, report.rows, report.live_rows) == (2, 6, None)  # no row set yet


def test_a_format_1_link_with_an_edited_row_is_still_found(tmp_path: Path) -> None:
    root = tmp_path / "audit"
    _old_trail(root)
    log = root / "validations" / "_delta_log" / f"{2:020d}.json"
    (add,) = [json.loads(line)["add"] for line in log.read_text().splitlines() if '"add"' in line]
    rows = [validation_row(request_id=f"old1-{n}") for n in range(3)]
    rows[0] = rows[0].model_copy(update={"status": "FAILED"})
    shutil.copyfile(_forged_file(tmp_path, rows), root / "validations" / add["path"])
    assert _kinds(_verify(root)) == [("ROW_CHANGED", 2)]


def test_an_old_trail_written_on_continues_its_chain_in_the_current_format(
    tmp_path: Path,
) -> None:
    root = tmp_path / "audit"
    _old_trail(root)
    store = DeltaAuditStore(root, flush_interval_seconds=30, min_vacuum_retention_hours=0)
    store.record(validation_row(request_id="new"), query_row(request_id="new"))
    store.close()
    report = _verify(root)
    assert report.findings == []
    assert (report.links, report.live_rows) == (3, 7)  # the 6 old rows start the row set
    history = DeltaTable(str(root / "validations")).history()
    newest = next(c["groundlock.chain"] for c in history if "groundlock.chain" in c)
    assert (newest["v"], newest["seq"], newest["total"]) == (3, 3, 7)


def test_old_rows_edited_after_the_upgrade_are_found_once_compacted(tmp_path: Path) -> None:
    root = tmp_path / "audit"
    _old_trail(root)
    store = DeltaAuditStore(root, flush_interval_seconds=30, min_vacuum_retention_hours=0)
    store.record(validation_row(request_id="new"), query_row(request_id="new"))
    store.close()
    _compacted_and_vacuumed(store)
    report = _verify(root)
    # The format-1 links' own files are gone: those links cannot be checked alone (as
    # before), but their rows are in the row set the first format-2 link started from.
    assert _kinds(report) == [("FILE_COMPACTED_AWAY", 1), ("FILE_COMPACTED_AWAY", 2)]
    assert report.live_rows == 7
    rows = store.select(ValidationRow)
    edited = [rows[0].model_copy(update={"status": "FAILED"}), *rows[1:]]
    (compacted,) = _live(root)
    shutil.copyfile(_forged_file(tmp_path, edited), compacted)
    assert ("LIVE_ROWS_CHANGED", None) in _kinds(_verify(root))


# -- Delta's log cleanup ---------------------------------------------------------------------------


def _age_log(root: Path, table: str = "validations", days: int = 40) -> None:
    """Make every commit file look ``days`` old (log cleanup goes by modification time)."""
    then = time.time() - days * 86_400
    for path in (root / table / "_delta_log").glob("*.json"):
        os.utime(path, (then, then))


def _checkpoint_and_clean(root: Path, table: str = "validations") -> list[int]:
    """Write a Delta log checkpoint and run delta-rs's log cleanup; the versions left."""
    delta = DeltaTable(str(root / table))
    delta.create_checkpoint()
    delta.cleanup_metadata()
    log = root / table / "_delta_log"
    return sorted(int(path.stem) for path in log.glob("*.json"))


def test_a_new_table_keeps_its_log_through_a_checkpoint_and_cleanup(tmp_path: Path) -> None:
    root = tmp_path / "audit"
    _trail(root)
    configuration = DeltaTable(str(root / "validations")).metadata().configuration
    assert configuration["delta.enableExpiredLogCleanup"] == "false"
    _age_log(root)
    assert _checkpoint_and_clean(root) == [0, 1, 2, 3]
    assert _verify(root).findings == []


def _short_retention(root: Path) -> None:
    """Configure the validations table as an operator could: cleanup on, one day kept."""
    DeltaTable(str(root / "validations")).alter.set_table_properties(
        {"delta.enableExpiredLogCleanup": "true", "delta.logRetentionDuration": "interval 1 days"}
    )


def test_a_log_cleaned_by_a_short_retention_is_reported_truncated(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "audit"
    store = _trail(root)  # versions 0-3
    _short_retention(root)  # version 4
    with caplog.at_level(logging.WARNING, logger="groundlock.audit"):
        assert store.problem() is None  # warned, not refused
    assert "validations table has delta.enableExpiredLogCleanup set" in caplog.text
    store.record(validation_row(request_id="late"), query_row(request_id="late"))
    store.close()  # version 5, linked
    _age_log(root)
    assert _checkpoint_and_clean(root) == [5]  # versions 0-4 and their links are gone
    report = _verify(root)
    assert _kinds(report) == [("LOG_TRUNCATED", 5)]
    # The link left still accounts for every row: its running row set holds the cleaned ones.
    assert (report.links, report.live_rows) == (1, 13)


def test_delta_rs_cleans_a_log_so_configured_on_its_own(tmp_path: Path) -> None:
    # No explicit cleanup: the next commit's post-commit hook deletes the expired commits.
    root = tmp_path / "audit"
    store = _trail(root)
    _short_retention(root)
    _age_log(root)
    DeltaTable(str(root / "validations")).create_checkpoint()  # at version 4
    store.record(validation_row(request_id="late"), query_row(request_id="late"))
    store.close()
    assert _kinds(_verify(root)) == [("LOG_TRUNCATED", 4)]


def test_a_checkpoint_older_than_the_retained_log_does_not_cover_it(tmp_path: Path) -> None:
    root = tmp_path / "audit"
    _trail(root)
    _short_retention(root)
    signed = make_checkpoint([_verify(root)], KEY)  # the head: the link at version 3
    _age_log(root)
    assert _checkpoint_and_clean(root) == [4]
    report = _verify(root)
    waive_covered_truncation(signed, KEY, [report])
    assert _kinds(report) == [("LOG_TRUNCATED", 4)]
    assert [f.kind for f in check_checkpoint(signed, KEY, [report])] == ["UNCHECKABLE"]


def test_a_checkpoint_inside_the_retained_log_waives_the_truncation(tmp_path: Path) -> None:
    root = tmp_path / "audit"
    store = _trail(root)
    _short_retention(root)
    store.record(validation_row(request_id="late"), query_row(request_id="late"))
    store.close()  # version 5, linked
    signed = make_checkpoint([_verify(root)], KEY)  # signed while the whole log verified
    _age_log(root)
    assert _checkpoint_and_clean(root) == [5]
    unsigned = _verify(root)
    waive_covered_truncation(signed, b"another key, not the signer's", [unsigned])
    assert _kinds(unsigned) == [("LOG_TRUNCATED", 5)]
    report = _verify(root)
    waive_covered_truncation(signed, KEY, [report])
    assert report.findings == []
    assert "log cleaned before version 5, covered by the signed checkpoint" in report.summary()
    assert check_checkpoint(signed, KEY, [report]) == []


def test_an_older_table_is_upgraded_to_keep_its_log(tmp_path: Path) -> None:
    root = tmp_path / "audit"
    _old_trail(root)
    store = DeltaAuditStore(root, flush_interval_seconds=30)
    assert store.problem() is None
    for table in ("validations", "queries", "feedback"):
        delta = DeltaTable(str(root / table))
        assert delta.metadata().configuration["delta.enableExpiredLogCleanup"] == "false"
        assert "groundlock.chain.start" in delta.history(1)[0]
    assert _verify(root).findings == []


# -- feedback ------------------------------------------------------------------------------------


def test_feedback_is_chained(tmp_path: Path) -> None:
    root = tmp_path / "audit"
    store = _trail(root, batches=1)
    store.add_feedback("r0-0", 5, "right")
    store.add_feedback("r0-1", 2)
    report = _verify(root, "feedback")
    assert report.findings == []
    assert (report.links, report.rows, report.live_rows) == (2, 2, 2)


def test_an_edited_feedback_row_is_found(tmp_path: Path) -> None:
    root = tmp_path / "audit"
    store = _trail(root, batches=1)
    row = store.add_feedback("r0-0", 5, "right")
    store.add_feedback("r0-1", 2)
    (target,) = [
        path for path in _live(root, "feedback") if path.name in _added(root, "feedback", 1)
    ]
    scratch = tmp_path / "scratch-feedback"
    write_deltalake(str(scratch), to_arrow(FeedbackRow, [row.model_copy(update={"rating": 1})]))
    shutil.copyfile(next(scratch.glob("*.parquet")), target)
    assert _kinds(_verify(root, "feedback")) == [("ROW_CHANGED", 1)]


def test_feedback_committed_around_the_store_is_an_unlinked_commit(tmp_path: Path) -> None:
    root = tmp_path / "audit"
    store = _trail(root, batches=1)
    store.add_feedback("r0-0", 5)
    table = DeltaTable(str(root / "feedback"))
    write_deltalake(table, table_rows(table, FeedbackRow, [_feedback("forged", 1)]), mode="append")
    assert _kinds(_verify(root, "feedback")) == [("UNLINKED_COMMIT", 2)]


def test_feedback_from_before_the_chain_is_reported_unchained_not_tampered(
    tmp_path: Path,
) -> None:
    root = tmp_path / "audit"
    _old_trail(root)
    store = DeltaAuditStore(root, flush_interval_seconds=30)
    store.add_feedback("new", 3)
    report = _verify(root, "feedback")
    assert report.findings == []
    assert report.unchained_rows == 2
    assert "2 row(s) unchained (written before the chain existed)" in report.summary()
    assert report.live_rows == 3


def test_unchained_feedback_edited_after_the_chain_began_is_found(tmp_path: Path) -> None:
    root = tmp_path / "audit"
    _old_trail(root)
    store = DeltaAuditStore(root, flush_interval_seconds=30)
    store.add_feedback("new", 3)
    (old,) = [path for path in _live(root, "feedback") if path.name in _added(root, "feedback", 1)]
    scratch = tmp_path / "scratch-old-feedback"
    edited = _feedback("old0", 5).model_copy(update={"comment": "changed after the fact"})
    write_deltalake(str(scratch), to_arrow(FeedbackRow, [edited]))
    shutil.copyfile(next(scratch.glob("*.parquet")), old)
    report = _verify(root, "feedback")
    assert _kinds(report) == [("LIVE_ROWS_CHANGED", None)]
    assert report.findings[0].files == (old.name,)


def _added(root: Path, table: str, version: int) -> set[str]:
    log = root / table / "_delta_log" / f"{version:020d}.json"
    actions = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    # (By file name: a file of a table laid out by day sits in its day's folder.)
    return {Path(action["add"]["path"]).name for action in actions if "add" in action}


def test_feedback_from_racing_processes_stays_one_chain(tmp_path: Path) -> None:
    # Four processes add feedback at once: the key guard makes delta-rs refuse a commit
    # that raced another, whose writer links to the new head and tries again.
    import multiprocessing  # noqa: PLC0415

    root = tmp_path / "audit"
    _trail(root, batches=1)
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_add_feedback, args=(str(root), n)) for n in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert [worker.exitcode for worker in workers] == [0, 0, 0, 0]
    report = _verify(root, "feedback")
    assert report.findings == []
    assert (report.links, report.live_rows) == (12, 12)


def _add_feedback(root: str, worker: int) -> None:
    store = DeltaAuditStore(root, flush_interval_seconds=30)
    for number in range(3):
        store.add_feedback(f"r0-{worker}", number + 1, f"worker {worker}")


def _format_2_link(
    table: DeltaTable, row_type: type[TableRow], rows: Sequence[TableRow], writer: str
) -> dict[str, Any]:
    """The link the store wrote before format 3 (no ``own``: the digest needs the rows)."""
    head = chain_head(table, row_type.table)
    hashes = [model_row_hash(row) for row in rows]
    running = (head.running or EMPTY).plus(hashes)
    digest = batch_digest(row_type.table, head.digest, hashes, running)
    return Link(head.seq + 1, head.digest, digest, len(rows), writer, running).metadata()


def test_format_2_links_still_verify_and_a_format_3_link_follows_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "audit"
    monkeypatch.setattr(delta_module, "_link", _format_2_link)
    store = DeltaAuditStore(root, flush_interval_seconds=30)
    for n in range(2):
        store.record(validation_row(request_id=f"v2-{n}"), query_row(request_id=f"v2-{n}"))
        store.flush()
    store.close()
    monkeypatch.undo()
    store = DeltaAuditStore(root, flush_interval_seconds=30)
    store.record(validation_row(request_id="v3"), query_row(request_id="v3"))
    store.close()
    history = DeltaTable(str(root / "validations")).history()
    formats = [c["groundlock.chain"]["v"] for c in history if "groundlock.chain" in c]
    assert formats == [3, 2, 2]  # newest first
    report = _verify(root)
    assert report.findings == []
    assert report.live_rows == 3
    # An edited row of a format-2 commit is still found, by its digest over the rows.
    logs = sorted((root / "validations" / "_delta_log").glob("*.json"))
    version, add = next(
        (int(path.stem), json.loads(line)["add"])
        for path in logs
        for line in path.read_text().splitlines()
        if '"add"' in line
    )
    forged = [validation_row(request_id="v2-0", message="edited")]
    shutil.copyfile(_forged_file(tmp_path, forged), root / "validations" / add["path"])
    assert ("ROW_CHANGED", version) in _kinds(_verify(root))
