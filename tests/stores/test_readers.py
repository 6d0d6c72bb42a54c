"""Reading a damaged trail (issue 27.8): one-line errors that name the table and the file.

``select``, ``executions`` and the archive keep returning row models only, and refuse a row
that breaks its model in one line naming it; :func:`read_rows` keeps such a row in place for
a reader to show. A data file gone from disk is named, by its name inside the table.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from groundlock import grounded_answer_chain
from groundlock.stores import DeltaAuditStore, FeedbackRow, ValidationRow
from groundlock.stores.archive import EvidenceArchive
from groundlock.stores.readers import InvalidRow, TrailDamaged, read_rows
from tests.builders import make_bundle
from tests.cli.tampering import edit, remove_a_data_file
from tests.stores.rows import query_row, validation_row


@pytest.fixture
def store(tmp_path: Path) -> DeltaAuditStore:
    audit = DeltaAuditStore(tmp_path / "audit", flush_interval_seconds=30)
    for number in range(3):
        audit.record(
            validation_row(request_id=f"req-{number}"), query_row(request_id=f"req-{number}")
        )
    audit.close()
    return audit


def _negative_latency(store: DeltaAuditStore, request_id: str) -> None:
    edit(Path(store.table_uri(ValidationRow)), f"request_id = '{request_id}'", latency_ms=-1.0)


def _remove_a_data_file(table: str) -> str:
    return remove_a_data_file(Path(table))


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


def test_a_deleted_archive_file_is_named_by_the_archive(tmp_path: Path) -> None:
    archive = EvidenceArchive(tmp_path / "evidence")
    grounded_answer_chain(store=DeltaAuditStore(tmp_path / "audit"), archive=archive).invoke(
        make_bundle(request_id="kept")
    )
    name = _remove_a_data_file(str(tmp_path / "evidence"))
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


def test_a_deleted_data_file_is_named_by_select_and_executions(store: DeltaAuditStore) -> None:
    name = _remove_a_data_file(store.table_uri(ValidationRow))
    expected = f"the validations table cannot be read: its data file {name} is missing"
    with pytest.raises(TrailDamaged) as caught:
        store.select(ValidationRow)
    assert str(caught.value) == expected
    with pytest.raises(TrailDamaged) as caught:
        store.executions([("req-0", "run-1")])
    assert str(caught.value) == expected


@pytest.mark.parametrize("hours", [-1, 1_000_001, 2**64 - 1, 10**23])
def test_vacuum_refuses_a_retention_out_of_range(store: DeltaAuditStore, hours: int) -> None:
    # 2**64 - 1 reached delta-rs as a negative retention: every unreferenced file deleted.
    with pytest.raises(ValueError, match="is not between 0 and 1,000,000 h"):
        store.vacuum(hours, dry_run=True)


def test_compact_names_a_deleted_file_it_would_merge(store: DeltaAuditStore) -> None:
    store.add_feedback("req-0", 4)
    store.add_feedback("req-1", 5)  # two files: something to merge
    name = _remove_a_data_file(store.table_uri(FeedbackRow))
    with pytest.raises(TrailDamaged) as caught:
        store.compact()
    assert str(caught.value) == (
        f"the feedback table cannot be compacted: its data file {name} is missing"
    )
