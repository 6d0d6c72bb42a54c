"""Reading a damaged trail (issue 27.8): one-line errors that name the table and the file.

``select``, ``executions`` and the archive keep returning row models only, and refuse a row
that breaks its model in one line naming it; :func:`read_rows` keeps such a row in place for
a reader to show. A data file gone from disk is named, by its name inside the table.

On every backend (``location``: local disk, moto's S3, Azurite): rows are edited through
delta-rs, as anyone with write access could, and a data file is deleted from the disk,
bucket or container. A deleted object is named as a deleted local file is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from groundlock import grounded_answer_chain
from groundlock.stores import DeltaAuditStore, FeedbackRow, ValidationRow
from groundlock.stores.archive import EvidenceArchive
from groundlock.stores.readers import InvalidRow, TrailDamaged, read_rows
from tests.builders import make_bundle
from tests.stores.backends import Location
from tests.stores.rows import query_row, validation_row


@pytest.fixture
def store(location: Location) -> DeltaAuditStore:
    audit = location.store(flush_interval_seconds=30)
    for number in range(3):
        audit.record(
            validation_row(request_id=f"req-{number}"), query_row(request_id=f"req-{number}")
        )
    audit.close()
    return audit


def _negative_latency(store: DeltaAuditStore, request_id: str) -> None:
    """UPDATE the row's latency to -1 (append-only lifted for it, then set again)."""
    table = store.table_uri(ValidationRow)
    options = store.storage_options or None

    def opened() -> Any:
        return DeltaTable(table, storage_options=options)

    opened().alter.set_table_properties({"delta.appendOnly": "false"})
    opened().update(new_values={"latency_ms": -1.0}, predicate=f"request_id = '{request_id}'")
    opened().alter.set_table_properties({"delta.appendOnly": "true"})


def _remove_a_data_file(location: Location, table: str) -> str:
    """Delete one data file the table's log still references; returns its name."""
    first = DeltaTable(table, storage_options=location.storage_options or None).file_uris()[0]
    location.delete_file(first)
    return first.rsplit("/", 1)[-1]


def test_read_rows_keeps_a_row_that_breaks_its_model_in_place(store: DeltaAuditStore) -> None:
    _negative_latency(store, "req-1")
    rows = read_rows(store, ValidationRow, order_by="request_id")
    assert [type(row).__name__ for row in rows] == ["ValidationRow", "InvalidRow", "ValidationRow"]
    bad = rows[1]
    assert isinstance(bad, InvalidRow)
    assert bad.table == "validations"
    assert bad.get("request_id") == "req-1"
    assert bad.get("latency_ms") == -1.0
    assert bad.fields == {"latency_ms"}
    assert bad.problems == ("latency_ms: Input should be greater than or equal to 0",)


def test_a_deleted_archive_file_is_named_by_the_archive(location: Location) -> None:
    archive = EvidenceArchive(location.table("evidence"), location.storage_options)
    grounded_answer_chain(store=location.store(), archive=archive).invoke(
        make_bundle(request_id="kept")
    )
    name = _remove_a_data_file(location, location.table("evidence"))
    with pytest.raises(TrailDamaged) as caught:
        archive.select()
    assert (
        str(caught.value) == f"the evidence archive cannot be read: its data file {name} is missing"
    )


# -- the strict readers (select, executions, the archive): one line, naming the damage --


def test_select_refuses_a_row_that_breaks_its_model_in_one_line(store: DeltaAuditStore) -> None:
    _negative_latency(store, "req-1")
    with pytest.raises(TrailDamaged) as caught:
        store.select(ValidationRow)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("the validations table holds a row that breaks its model")
    assert "request req-1, run run-1): latency_ms: Input should be greater than or equal to 0" in (
        message
    )
    assert len(store.select(ValidationRow, "request_id <> 'req-1'")) == 2


def test_executions_refuses_a_row_that_breaks_its_model_in_one_line(
    store: DeltaAuditStore,
) -> None:
    _negative_latency(store, "req-1")
    assert set(store.executions([("req-0", "run-1")])) == {("req-0", "run-1")}
    with pytest.raises(TrailDamaged, match=r"^the validations table holds a row .* req-1"):
        store.executions([("req-1", "run-1")])


def test_a_deleted_data_file_is_named_by_select_and_executions(
    store: DeltaAuditStore, location: Location
) -> None:
    name = _remove_a_data_file(location, store.table_uri(ValidationRow))
    expected = f"the validations table cannot be read: its data file {name} is missing"
    with pytest.raises(TrailDamaged) as caught:
        store.select(ValidationRow)
    assert str(caught.value) == expected
    with pytest.raises(TrailDamaged) as caught:
        store.executions([("req-0", "run-1")])
    assert str(caught.value) == expected


@pytest.mark.parametrize("hours", [-1, 1_000_001, 2**64 - 1, 10**23])
def test_vacuum_refuses_a_retention_out_of_range(tmp_path: Path, hours: int) -> None:
    # 2**64 - 1 reached delta-rs as a negative retention: every unreferenced file deleted.
    # Refused before any table is opened: one (local) store says it for every backend.
    with pytest.raises(ValueError, match="is not between 0 and 1,000,000 h"):
        DeltaAuditStore(tmp_path / "audit").vacuum(hours, dry_run=True)


def test_compact_names_a_deleted_file_it_would_merge(
    store: DeltaAuditStore, location: Location
) -> None:
    store.add_feedback("req-0", 4)
    store.add_feedback("req-1", 5)  # two files: something to merge
    name = _remove_a_data_file(location, store.table_uri(FeedbackRow))
    with pytest.raises(TrailDamaged) as caught:
        store.compact()
    assert str(caught.value) == (
        f"the feedback table cannot be compacted: its data file {name} is missing"
    )
