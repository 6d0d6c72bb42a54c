"""An adversarial review of the trail's tamper evidence: attacks ``records verify`` misses.

Each test is one attack by someone with write access to the storage but not the operator's
checkpoint key, made on a real local trail as such a person would make it: with plain
delta-rs (``write_deltalake``, ``DeltaTable``) and by editing ``_delta_log`` JSON and Parquet
files. Each asserts what verify reports; each failed when the review wrote it (as a strict
xfail) and passes since the fix it names (``LINK_CHANGED``, ``CHECKPOINT_AHEAD``,
``DELETION_VECTOR``, ``LAYOUT_CHANGED``, removes checked in linked commits).

What every attack here shared: verify hashed the *physical* Parquet rows and trusted
whatever in the log is not a row (a link's row set once its files are gone, a Delta
checkpoint, deletion vectors, partition values, column mapping), while every reader sees
the *logical* table delta-rs builds from all of it.
"""

from __future__ import annotations

import copy
import json
import shutil
import struct
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable, write_deltalake

from groundlock.stores import DeltaAuditStore, MemoryAuditSink, ValidationRow
from groundlock.stores.arrow import to_arrow
from groundlock.stores.hashchain import CHAIN_KEY, row_hash
from groundlock.stores.lthash import LtHash
from groundlock.stores.sink import TrailQuery
from groundlock.stores.verify import (
    TableReport,
    _file_rows,
    check_checkpoint,
    make_checkpoint,
    verify_table,
)
from tests.stores.rows import query_row, validation_row

KEY = b"operator-held key, never beside the trail"


def _trail(root: Path, batches: int = 3, per_batch: int = 4, **fields: Any) -> DeltaAuditStore:
    store = DeltaAuditStore(root, flush_interval_seconds=30, min_vacuum_retention_hours=0)
    for batch in range(batches):
        for number in range(per_batch):
            request_id = f"r{batch}-{number}"
            status = "FAILED" if number % 2 else "OK"
            store.record(
                validation_row(request_id=request_id, status=status, **fields),
                query_row(request_id=request_id),
            )
        store.flush()
    store.close()
    return store


def _verify(root: Path, since: int = 0) -> TableReport:
    return verify_table(root / "validations", "validations", since=since)


def _signed(root: Path) -> dict[str, Any]:
    """The operator's checkpoint, taken while the trail is untouched."""
    report = _verify(root)
    assert report.findings == []
    return make_checkpoint([report], KEY)


def _problems(root: Path, checkpoint: dict[str, Any] | None = None, since: int = 0) -> list[str]:
    report = _verify(root, since)
    found = [finding.kind for finding in report.findings]
    if checkpoint is not None:
        found += [finding.kind for finding in check_checkpoint(checkpoint, KEY, [report])]
    return found


def _log(root: Path) -> Path:
    return root / "validations" / "_delta_log"


def _actions(root: Path, version: int) -> list[dict[str, Any]]:
    text = (_log(root) / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _rewrite(root: Path, version: int, actions: list[dict[str, Any]]) -> None:
    lines = "".join(json.dumps(action) + "\n" for action in actions)
    (_log(root) / f"{version:020d}.json").write_text(lines)


def _versions(root: Path) -> list[int]:
    return sorted(int(path.stem) for path in _log(root).glob("*.json"))


def _linked(root: Path) -> list[int]:
    return [
        v
        for v in _versions(root)
        if any(CHAIN_KEY in a.get("commitInfo", {}) for a in _actions(root, v))
    ]


def _forged_file(tmp_path: Path, rows: list[ValidationRow]) -> Path:
    scratch = tmp_path / f"scratch-{len(list(tmp_path.glob('scratch-*')))}"
    write_deltalake(str(scratch), to_arrow(ValidationRow, rows))
    (path,) = scratch.glob("*.parquet")
    return path


def _read(root: Path) -> list[ValidationRow]:
    """What every reader of the trail sees (``groundlock report``, replay, the tools)."""
    return DeltaAuditStore(root).select(ValidationRow)


# -- 1. a link's row set is bound to nothing once its files are compacted away -----------------


def test_rows_edited_after_compaction_are_hidden_by_rewriting_the_newest_links_row_set(
    tmp_path: Path,
) -> None:
    root = tmp_path / "audit"
    store = _trail(root)
    store.compact()
    store.vacuum(0, dry_run=False)  # the operator's routine upkeep
    checkpoint = _signed(root)  # and a checkpoint after it
    # The attacker edits one row, drops another, in the compacted file...
    rows = store.select(ValidationRow)
    changed = [rows[0].model_copy(update={"status": "FAILED"}), *rows[1:-1]]
    (compacted,) = [Path(uri) for uri in DeltaTable(str(root / "validations")).file_uris()]
    shutil.copyfile(_forged_file(tmp_path, changed), compacted)
    (compaction,) = [v for v in _versions(root) if any("remove" in a for a in _actions(root, v))]
    actions = _actions(root, compaction)
    for action in actions:  # ...fixes the compaction's add so delta-rs reads the new file...
        if "add" in action:
            action["add"]["size"] = compacted.stat().st_size
            action["add"]["stats"] = json.dumps({"numRecords": len(changed)})
    _rewrite(root, compaction, actions)
    # ...and writes the row set of what it left into the newest link (digest untouched).
    hashes = [row_hash(row) for row in _file_rows(compacted)]
    newest = _linked(root)[-1]
    actions = _actions(root, newest)
    link = next(a["commitInfo"][CHAIN_KEY] for a in actions if "commitInfo" in a)
    link["total"], link["set"] = len(hashes), LtHash.of(hashes).text()
    _rewrite(root, newest, actions)
    read = {row.record_id: row.status for row in _read(root)}
    assert (read[rows[0].record_id], len(read)) == ("FAILED", len(rows) - 1)
    # The newest link's running sum was rewritten: it no longer hashes to its digest.
    assert "LINK_CHANGED" in _problems(root, checkpoint)


# -- 2. a Delta checkpoint past the last commit is what readers see, and verify never reads it --


def test_a_delta_checkpoint_past_the_last_commit_changes_the_table_unseen(tmp_path: Path) -> None:
    root = tmp_path / "audit"
    _trail(root)
    checkpoint = _signed(root)
    table = root / "validations"
    kept = set(_versions(root))
    DeltaTable(str(table)).alter.set_table_properties({"delta.appendOnly": "false"})
    DeltaTable(str(table)).delete("request_id = 'r1-2'")
    DeltaTable(str(table)).alter.set_table_properties({"delta.appendOnly": "true"})
    DeltaTable(str(table)).create_checkpoint()
    for version in set(_versions(root)) - kept:  # only the Delta checkpoint is left of them
        (_log(root) / f"{version:020d}.json").unlink()
    assert DeltaTable(str(table)).version() > max(kept)
    assert "r1-2" not in {row.request_id for row in _read(root)}
    assert _problems(root, checkpoint) != []  # today: [] (verified, checkpoint holds)


# -- 3-5. the log decides what a row *reads as*; verify hashes only the Parquet -----------------

_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def _z85(data: bytes) -> str:
    out = []
    for start in range(0, len(data), 4):
        value = int.from_bytes(data[start : start + 4], "big")
        chunk = []
        for _ in range(5):
            chunk.append(_Z85[value % 85])
            value //= 85
        out += reversed(chunk)
    return "".join(out)


def _inline_deletion_vector(rows: list[int]) -> dict[str, Any]:
    """Delta's inline deletion vector deleting ``rows`` (a RoaringBitmapArray, Z85)."""
    values = sorted(rows)
    bitmap = (
        struct.pack("<II", 12346, 1)  # portable roaring, no run containers, one container
        + struct.pack("<HH", 0, len(values) - 1)
        + struct.pack("<I", 16)
        + b"".join(struct.pack("<H", value) for value in values)
    )
    serialized = struct.pack("<i", 1681511377) + struct.pack("<q", 1) + struct.pack("<i", 0)
    serialized += bitmap
    padded = serialized + b"\0" * (-len(serialized) % 4)
    return {
        "storageType": "i",
        "pathOrInlineDv": _z85(padded),
        "sizeInBytes": len(serialized),
        "cardinality": len(values),
    }


def test_a_deletion_vector_in_a_linked_commit_hides_rows(tmp_path: Path) -> None:
    root = tmp_path / "audit"
    _trail(root, batches=1)
    checkpoint = _signed(root)
    for version in _versions(root):
        actions = _actions(root, version)
        for action in actions:
            if "protocol" in action:
                action["protocol"] = {
                    "minReaderVersion": 3, "minWriterVersion": 7,
                    "readerFeatures": ["deletionVectors"],
                    "writerFeatures": ["deletionVectors", "appendOnly"],
                }  # fmt: skip
            if "add" in action:
                action["add"]["deletionVector"] = _inline_deletion_vector([0, 2])
        _rewrite(root, version, actions)
    assert len(_read(root)) == 2  # of 4
    assert _problems(root, checkpoint) != []  # today: [] (verified, "4 live rows")


def _metadata_commit(root: Path, change: Any, protocol: dict[str, Any] | None = None) -> None:
    """Append a commit that only changes the table's metadata (no rows added or removed)."""
    created = _actions(root, 0)
    metadata = copy.deepcopy(next(a["metaData"] for a in created if "metaData" in a))
    change(metadata)
    actions: list[dict[str, Any]] = [{"commitInfo": {"operation": "SET TBLPROPERTIES"}}]
    if protocol is not None:
        actions.append({"protocol": protocol})
    actions.append({"metaData": metadata})
    _rewrite(root, _versions(root)[-1] + 1, actions)


def test_partition_values_in_the_log_rewrite_a_column_for_readers(tmp_path: Path) -> None:
    root = tmp_path / "audit"
    _trail(root, batches=2)
    checkpoint = _signed(root)
    assert {row.status for row in _read(root)} == {"OK", "FAILED"}

    def partition_by_status(metadata: dict[str, Any]) -> None:
        metadata["partitionColumns"] = ["status"]

    _metadata_commit(root, partition_by_status)
    for version in _linked(root):
        actions = _actions(root, version)
        for action in actions:
            if "add" in action:
                action["add"]["partitionValues"] = {"status": "OK"}
        _rewrite(root, version, actions)
    assert {row.status for row in _read(root)} == {"OK"}  # every FAILED request now reads OK
    assert _problems(root, checkpoint) != []  # today: [] (verified)


def test_a_column_mapping_commit_swaps_two_columns_for_readers(tmp_path: Path) -> None:
    root = tmp_path / "audit"
    _trail(root, batches=1, model_name="configured-model", reported_model_name="served-model")
    checkpoint = _signed(root)

    def swap(metadata: dict[str, Any]) -> None:
        schema = json.loads(metadata["schemaString"])
        for number, field in enumerate(schema["fields"], 1):
            field["metadata"] = {
                "delta.columnMapping.id": number,
                "delta.columnMapping.physicalName": field["name"],
            }
        named = {field["name"]: field["metadata"] for field in schema["fields"]}
        named["model_name"]["delta.columnMapping.physicalName"] = "reported_model_name"
        named["reported_model_name"]["delta.columnMapping.physicalName"] = "model_name"
        metadata["schemaString"] = json.dumps(schema)
        metadata["configuration"]["delta.columnMapping.mode"] = "name"
        metadata["configuration"]["delta.columnMapping.maxColumnId"] = str(len(schema["fields"]))

    _metadata_commit(root, swap, {"minReaderVersion": 2, "minWriterVersion": 5})
    assert {row.model_name for row in _read(root)} == {"served-model"}
    assert _problems(root, checkpoint) != []  # today: [] (verified)


# -- 6. --since: a linked commit's other actions are never checked -----------------------------


def test_a_remove_added_to_a_linked_commit_passes_verify_since(tmp_path: Path) -> None:
    root = tmp_path / "audit"
    _trail(root)
    first, *_, newest = _linked(root)
    (dropped,) = [a["add"]["path"] for a in _actions(root, first) if "add" in a]
    actions = _actions(root, newest)
    actions.append({"remove": {"path": dropped, "dataChange": True, "deletionTimestamp": 1}})
    _rewrite(root, newest, actions)
    assert len(_read(root)) == 8  # of 12
    assert "ROWS_REMOVED" in _problems(root)
    assert "ROWS_REMOVED" in _problems(root, since=newest)


# -- 7. the typed read seam: Delta and memory must answer one query alike ----------------------


@pytest.mark.parametrize(
    "query",
    [
        TrailQuery(since=datetime(1, 1, 1, tzinfo=UTC)),
        TrailQuery(until=datetime(2300, 1, 1, tzinfo=UTC)),
    ],
    ids=["since-year-1", "until-2300"],
)
def test_an_open_ended_time_window_reads_as_in_memory(tmp_path: Path, query: TrailQuery) -> None:
    store = DeltaAuditStore(tmp_path / "audit", flush_interval_seconds=30)
    memory = MemoryAuditSink()
    for number in range(3):
        validation, query_row_ = validation_row(request_id=f"r{number}"), query_row()
        store.record(validation, query_row_)
        memory.record(validation, query_row_)
    store.flush()
    store.close()
    wanted = [row.request_id for row in memory.rows(ValidationRow, query)]
    assert wanted == ["r0", "r1", "r2"]
    assert [getattr(row, "request_id", None) for row in store.rows(ValidationRow, query)] == wanted
